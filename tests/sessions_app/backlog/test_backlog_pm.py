"""The Product Manager (issue 40 item 2): a spec given to a project becomes a job in the
project's Product Manager session whose ``propose_backlog`` call proposes epics and tasks
(a person accepts them, or the project lets them through); the tool is seen only by a role
holding ``propose_tasks``; a completeness check starts once each time every task is done
and proposes follow-ups the same way."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from acode.errors import AcodeError
from roles.registry import registry
from sessions_app.agent.loop import run_job
from sessions_app.models import (
    AuditEvent,
    BacklogProject,
    BacklogTask,
    Job,
    JobEventKind,
    TaskStatus,
)
from sessions_app.services.backlog import backlog_import, project_create
from sessions_app.services.backlog_pm import completeness_checks, project_plan
from sessions_app.services.backlog_scheduler import backlog_schedule
from tests.sessions_app.backlog.kit import SPEC, proposes, statuses
from tests.sessions_app.jobkit import run, scripted_model, session_in
from tests.sessions_app.runkit import calls

pytestmark = pytest.mark.django_db

SPEC_TEXT = "A greeter: hello() says hello, bye() says bye, both() says both in one line."
FOLLOW_UP = {"tasks": [{"key": "docs", "title": "Document the greeter", "priority": "low",
                        "acceptance_criteria": ["README says how to greet"],
                        "depends_on": ["both"]}]}  # fmt: skip


def pm_script(*jobs: list[dict[str, Any]]) -> None:
    scripted_model("product-manager", list(jobs))


@pytest.fixture
def project(user: User) -> BacklogProject:
    return project_create(owner=user, slug="greeter", title="Greeter")


def test_a_spec_becomes_three_proposed_tasks_with_dependencies(
    user: User, project: BacklogProject, api: APIClient
) -> None:
    pm_script(proposes(SPEC))
    answer = api.post("/api/backlog/projects/greeter/plan/", {"spec": SPEC_TEXT}, format="json")
    assert answer.status_code == 202, answer.content
    job = run_job(answer.json()["job"])
    assert job.status == "succeeded", (job.error_code, job.error_message)
    assert job.role.slug == "product-manager" and "## Spec\n" + SPEC_TEXT in job.request

    project.refresh_from_db()
    assert project.description == SPEC_TEXT and project.pm_session_id == job.session_id
    tasks = {t.key: t for t in BacklogTask.objects.filter(project=project)}
    assert statuses(project) == {"hello": "proposed", "bye": "proposed", "both": "proposed"}
    assert {d.key for d in tasks["both"].depends_on.all()} == {"hello", "bye"}
    assert tasks["hello"].acceptance_criteria == ["hello() returns 'hello'"]
    assert {t.proposed_by for t in tasks.values()} == {"product-manager"}
    assert tasks["hello"].epic is not None and tasks["hello"].epic.key == "greetings"
    # The call was decided and audited before it ran, like every tool call.
    assert AuditEvent.objects.filter(session=job.session, event_type="RoleAction",
                                     result="3 tasks proposed").exists()  # fmt: skip

    for key in ("hello", "bye", "both"):  # a person accepts each through the API
        accepted = api.post(f"/api/backlog/projects/greeter/tasks/{key}/accept/")
        assert accepted.status_code == 200, accepted.content
    assert set(statuses(project).values()) == {"backlog"}
    shown = api.get("/api/backlog/projects/greeter/").json()
    assert (shown["pm_job"], shown["pm_job_kind"], shown["pm_job_status"]) == (
        str(job.pk), "plan", "succeeded")  # fmt: skip


def test_a_project_that_auto_accepts_takes_the_proposals_into_the_backlog(user: User) -> None:
    project = project_create(owner=user, slug="auto", title="Auto", auto_accept_proposals=True)
    pm_script(proposes(SPEC))
    job = run_job(project_plan(project=project, spec=SPEC_TEXT, user=user).pk)
    assert job.status == "succeeded"
    assert statuses(project) == {"hello": "backlog", "bye": "backlog", "both": "backlog"}
    assert "added to the backlog" in job.events.get(kind=JobEventKind.TOOL_RESULT).data["output"]


def test_a_proposal_that_does_not_fit_comes_back_to_the_model(
    user: User, project: BacklogProject
) -> None:
    broken = copy.deepcopy(SPEC)
    broken["epics"][0]["tasks"][2]["depends_on"] = ["hello", "ghost"]
    pm_script(calls(("propose_backlog", broken), ("propose_backlog", SPEC), final="fixed"))
    job = run_job(project_plan(project=project, spec=SPEC_TEXT, user=user).pk)
    denied = job.events.get(kind=JobEventKind.TOOL_DENIED).data
    assert denied["code"] == "ACODE-BKL-004" and "ghost" in denied["reason"], denied
    assert job.status == "succeeded"
    assert set(statuses(project)) == {"hello", "bye", "both"}  # the corrected call, whole


def test_planning_while_the_product_manager_works_is_refused(
    user: User, project: BacklogProject, api: APIClient
) -> None:
    first = api.post("/api/backlog/projects/greeter/plan/", {"spec": SPEC_TEXT}, format="json")
    assert first.status_code == 202
    again = api.post("/api/backlog/projects/greeter/plan/", {"spec": "other"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "ACODE-BKL-005"
    blank = api.post("/api/backlog/projects/greeter/plan/", {"spec": " "}, format="json")
    assert blank.status_code == 400
    missing = api.post("/api/backlog/projects/nope/plan/", {"spec": "x"}, format="json")
    assert missing.status_code == 404 and missing.json()["code"] == "ACODE-BKL-003"


def test_without_the_product_manager_role_planning_is_refused(
    user: User, project: BacklogProject
) -> None:
    from roles.models import Role

    Role.objects.filter(slug="product-manager").delete()
    registry.sync()
    with pytest.raises(AcodeError) as refused:
        project_plan(project=project, spec=SPEC_TEXT, user=user)
    assert refused.value.code == "ACODE-BKL-006"
    assert completeness_checks() == []


def test_only_a_role_holding_propose_tasks_gets_the_tool(user: User) -> None:
    names = {role: {t.name for t in registry.effective_tools(role)} for role in
             ("product-manager", "planner", "coder", "default")}  # fmt: skip
    assert "propose_backlog" in names["product-manager"]
    assert not {"write_file", "create_file", "execute_command"} & names["product-manager"]
    assert all("propose_backlog" not in names[r] for r in ("planner", "coder", "default"))
    # A Planner that calls it anyway is refused by the decision, and nothing is proposed.
    scripted_model("planner", [calls(("propose_backlog", SPEC), final="tried")])
    job = run(session_in("planner", user), "Plan it", user)
    denied = job.events.get(kind=JobEventKind.TOOL_DENIED).data
    assert denied["name"] == "propose_backlog", denied
    assert not BacklogTask.objects.exists()


def test_proposing_from_a_session_that_plans_no_project_is_refused(user: User) -> None:
    project_create(owner=user, slug="other", title="Other")
    session = session_in("default", user)
    from sessions_app.services.transitions import session_transition

    session_transition(session=session, to_role="product-manager", reason="try", actor="test")
    pm_script(proposes(SPEC, final="tried"))
    job = run(session, "Propose something", user)
    denied = job.events.get(kind=JobEventKind.TOOL_DENIED).data
    assert denied["code"] == "ACODE-BKL-007", denied
    assert not BacklogTask.objects.exists()


def _all_done(project: BacklogProject) -> None:
    BacklogTask.objects.filter(project=project).update(status=TaskStatus.DONE)


def test_a_completeness_check_starts_once_when_every_task_is_done(
    user: User, project: BacklogProject
) -> None:
    pm_script(proposes(SPEC), proposes(FOLLOW_UP, final="docs are missing"))
    run_job(project_plan(project=project, spec=SPEC_TEXT, user=user).pk)
    BacklogTask.objects.filter(project=project).update(status=TaskStatus.BACKLOG)
    assert completeness_checks() == []  # work is open: no check
    _all_done(project)

    backlog_schedule()  # the scheduler's tick notices it
    project.refresh_from_db()
    check = project.pm_job
    assert check is not None and project.pm_job_kind == "check"
    assert check.session_id == project.pm_session_id
    assert completeness_checks() == []  # once per "all done" moment
    assert SPEC_TEXT in check.request and "- hello: Add hello.py\n  - hello() returns 'hello'" \
        in check.request  # fmt: skip
    assert "untrusted-data" in check.request  # the branch's files, as data

    done = run_job(check.pk)
    assert done.status == "succeeded" and done.result == "docs are missing"
    docs = BacklogTask.objects.get(project=project, key="docs")
    assert (docs.status, docs.proposed_by) == ("proposed", "product-manager")
    assert [d.key for d in docs.depends_on.all()] == ["both"]
    backlog_schedule()
    assert Job.objects.filter(session=project.pm_session).count() == 2  # proposals wait

    # Accepted and done: a new "all done" moment, a new check.
    BacklogTask.objects.filter(pk=docs.pk).update(status=TaskStatus.DONE)
    assert completeness_checks() == ["greeter"]


def test_the_kanban_shows_the_product_manager_and_its_waiting_proposals(
    user: User, project: BacklogProject
) -> None:
    client = Client()
    client.force_login(user)
    page = client.get("/backlog/greeter/").content.decode()
    assert 'id="backlog-pm"' in page and "No spec planned yet" in page
    pm_script(proposes(SPEC, final="Three tasks: hello and bye first, then both."))
    assert client.post("/backlog/greeter/plan/", {"spec": SPEC_TEXT}).status_code == 302
    project.refresh_from_db()
    assert project.pm_job_id is not None
    run_job(project.pm_job_id)
    page = client.get("/backlog/greeter/").content.decode()
    assert 'data-pm-kind="plan" data-pm-status="succeeded"' in page
    assert "Three tasks: hello and bye first, then both." in page
    assert "3 proposals wait for a person" in page
    assert "/backlog/greeter/tasks/both/accept/" in page


def test_an_import_by_a_person_is_not_a_proposal(user: User, project: BacklogProject) -> None:
    backlog_import(project=project, document=SPEC, actor="alice")
    assert set(statuses(project).values()) == {"backlog"}
