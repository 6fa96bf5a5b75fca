"""A test stage with commands (seed 002's host-validation lane): its job runs the template's
commands in order without asking a model, each one decided and audited by the executor as
any call, stopping at the first that does not pass; its evidence sends failing checks back
to the Coder like any test stage; a refused command fails the run; templates whose commands
cannot run are refused on import and in admin."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User

from acode.errors import AcodeError
from roles.models import Role
from roles.services import role_write
from sessions_app.models import (
    AuditEvent,
    Job,
    JobEventKind,
    RunStatus,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.services.runs import run_start
from sessions_app.services.runs.portability import workflows_export, workflows_import
from sessions_app.services.sessions import session_create
from tests.sessions_app.jobkit import scripted_model
from tests.sessions_app.runkit import FIRST, PLAN_ONE_STEP, SECOND, calls, drive, history, review
from tests.sessions_app.services.test_run_selfcorrect import TEST_GREET

pytestmark = pytest.mark.django_db

PYTEST = ["python", "-m", "pytest", "-q", "test_greet.py"]
PYTEST_K = ["python", "-m", "pytest", "-q", "-k", "greet", "test_greet.py"]


def _checks(*commands: list[str]) -> None:
    stage = WorkflowStage.objects.get(template__slug="medium", purpose="test")
    stage.commands = [list(c) for c in commands]
    stage.save(update_fields=["commands"])


def _run(user: User, *coder: list[dict[str, Any]]) -> Any:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("coder", list(coder))
    scripted_model("reviewer", [review("approve", "looks right")])
    session = session_create(owner=user, title="host checks", task="greeting")
    return drive(run_start(session=session, request="Add a greeting helper", user=user,
                           risk="medium"))  # fmt: skip


def _tester_jobs(run: Any) -> list[Job]:
    return list(Job.objects.filter(run_stage__run=run, role__slug="tester").order_by("created_at"))


def test_the_checks_run_without_a_model_on_the_roles_queue_and_failing_ones_go_back_to_the_coder(
    user: User, client: Any
) -> None:
    role_write(data={"queue": "host-validation"}, create=False, slug="tester", actor="test")
    _checks(PYTEST, PYTEST_K)
    first = calls(("create_file", {"path": "test_greet.py", "content": TEST_GREET}),
                  ("create_file", {"path": "greet.py", "content": FIRST}), final="created")  # fmt: skip
    run = _run(user, first, calls(("write_file", {"path": "greet.py", "content": SECOND})))

    assert run.status == RunStatus.SUCCEEDED, run.message
    assert history(run) == [
        "Default", "Planner", "Coder", "Tester", "Coder", "Tester", "Reviewer", "Default"
    ]  # fmt: skip
    tests = list(run.stages.filter(purpose="test").order_by("seq"))
    assert [t.evidence["result"] for t in tests] == ["failed", "passed"]
    failed, passed = _tester_jobs(run)
    for job in (failed, passed):
        assert job.commands == [PYTEST, PYTEST_K] and job.llm_calls == 0
        assert job.request.startswith("Run the test stage's commands in order")
        kinds = set(job.events.values_list("kind", flat=True))
        assert JobEventKind.PROMPT not in kinds  # no model was asked
        queued = job.events.filter(kind=JobEventKind.STATUS).first()
        assert queued is not None and queued.data["queue"] == "host-validation"
    ran = [list(j.events.filter(kind=JobEventKind.TOOL_RESULT).values_list("data__target", flat=True))
           for j in (failed, passed)]  # fmt: skip
    assert [len(r) for r in ran] == [1, 2]  # the first check failed: the second never ran
    assert failed.result == "python -m pytest -q test_greet.py: exit 1"
    # each check was decided and audited as any call, before it ran
    decided = AuditEvent.objects.filter(actor=f"job:{str(passed.pk)[:8]}", role="tester")
    assert decided.filter(details__tool="run_tests").count() >= 2
    client.force_login(user)
    page = client.get(f"/sessions/{run.session_id}/").content.decode()
    assert "python -m pytest -q test_greet.py: exit 1" in page  # the failed check's job
    retry = Job.objects.filter(run_stage__run=run, role__slug="coder").order_by("created_at")
    assert "tests failed (exit 1)" in str(getattr(retry.last(), "request", ""))


def test_a_check_the_role_refuses_fails_the_run_saying_which(user: User) -> None:
    _checks(["sh", "-c", "psql -c 'select 1'"])  # stored past the checks, as by hand in SQL
    first = calls(("create_file", {"path": "greet.py", "content": SECOND}), final="created")
    run = _run(user, first)

    assert run.status == RunStatus.FAILED
    assert "The stage's command sh -c 'psql -c '\"'\"'select 1'\"'\"'' was refused" in run.message
    (job,) = _tester_jobs(run)
    assert job.events.filter(kind=JobEventKind.TOOL_DENIED).count() == 1
    assert not job.events.filter(kind=JobEventKind.TOOL_RESULT).exists()


def _medium_with(stage_changes: dict[str, Any], purpose: str = "test") -> dict[str, Any]:
    document = copy.deepcopy(workflows_export())
    medium = next(t for t in document["templates"] if t["slug"] == "medium")
    next(s for s in medium["stages"] if s["purpose"] == purpose).update(stage_changes)
    return document


@pytest.mark.parametrize(
    ("purpose", "commands", "code", "problem"),
    [
        ("code", [PYTEST], "ACODE-IMP-003", "only a test stage runs commands"),
        ("test", [["sh", "-c", "make e2e"]], "ACODE-IMP-003",
         "role tester's command rules refuse sh -c 'make e2e'"),
        ("test", [[]], "ACODE-IMP-001", "should be non-empty"),
        ("test", [["python", "a\x00b"]], "ACODE-IMP-001", "does not match"),
    ],
)  # fmt: skip
def test_an_import_whose_commands_cannot_run_is_refused_whole(
    purpose: str, commands: list[list[str]], code: str, problem: str
) -> None:
    before = workflows_export()
    with pytest.raises(AcodeError) as error:
        workflows_import(_medium_with({"commands": commands}, purpose), replace=False, actor="t")
    assert error.value.code == code
    assert any(problem in p for p in error.value.details["problems"]), error.value.details
    assert workflows_export() == before


def test_commands_round_trip_through_export_and_import_and_show_in_the_api(
    user: User, client: Any
) -> None:
    assert all("commands" not in s for t in workflows_export()["templates"] for s in t["stages"])
    workflows_import(_medium_with({"commands": [PYTEST]}), replace=False, actor="test")
    stage = WorkflowStage.objects.get(template__slug="medium", purpose="test")
    assert stage.commands == [PYTEST]
    exported = next(t for t in workflows_export()["templates"] if t["slug"] == "medium")
    assert [s.get("commands") for s in exported["stages"] if s["purpose"] == "test"] == [[PYTEST]]
    client.force_login(user)
    listed = client.get("/api/workflows/").json()
    medium = next(t for t in listed if t["slug"] == "medium")
    assert {s["purpose"]: s["commands"] for s in medium["stages"]}["test"] == [PYTEST]


def test_admin_saves_checks_on_a_test_stage_and_refuses_them_elsewhere(
    admin_client_logged_in: Any,
) -> None:
    from tests.sessions_app.test_workflows_portability import _admin_form

    url = "/admin/sessions_app/workflowtemplate/add/"
    form = _admin_form([("code", "coder"), ("test", "tester"), ("review", "reviewer")])
    form["stages-0-commands"] = '[["python", "-m", "pytest", "-q"]]'
    response = admin_client_logged_in.post(url, form)
    assert "only a test stage runs commands" in response.content.decode()
    assert not WorkflowTemplate.objects.filter(slug="ordered").exists()

    form["stages-0-commands"] = ""
    form["stages-1-commands"] = '[["python", "-m", "pytest", "-q"]]'
    response = admin_client_logged_in.post(url, form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    saved = {s.purpose: s.commands for s in WorkflowStage.objects.filter(template__slug="ordered")}
    assert saved == {"code": [], "test": [["python", "-m", "pytest", "-q"]], "review": []}
    assert Role.objects.get(slug="tester").queue == "agents"  # the lane is the role's queue
