"""Rejecting a proposal: a person says why, the task is closed (never done) and leaves the
board's columns for the collapsed Rejected list; refused while another task that is not
rejected depends on it (ACODE-BKL-008) or when it is not proposed (ACODE-BKL-001); audited;
the next completeness check is told which proposals were rejected and why."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from rest_framework.test import APIClient

from acode.errors import AcodeError
from sessions_app.dashboard.backlog import render_kanban
from sessions_app.models import AuditEvent, BacklogProject, BacklogTask, TaskStatus
from sessions_app.services.backlog import (
    backlog_import,
    project_create,
    task_accept,
    task_reject,
    task_reprioritise,
)
from sessions_app.services.backlog_pm import completeness_checks, completeness_due

pytestmark = pytest.mark.django_db

URL = "/api/backlog/projects/shop/tasks/{}/reject/"


@pytest.fixture
def project(user: User) -> BacklogProject:
    """``hello`` in the backlog; proposals ``docs``, ``extra`` and ``polish`` (which
    depends on ``extra``)."""
    made = project_create(owner=user, slug="shop", title="Shop")
    backlog_import(project=made, actor="t",
                   document={"tasks": [{"key": "hello", "title": "Add hello.py"}]})  # fmt: skip
    backlog_import(project=made, actor="pm", proposed_by="product-manager", document={"tasks": [
        {"key": "docs", "title": "Write docs"},
        {"key": "extra", "title": "Add a chatbot"},
        {"key": "polish", "title": "Polish the chatbot", "depends_on": ["extra"]},
    ]})  # fmt: skip
    return made


def task(key: str) -> BacklogTask:
    return BacklogTask.objects.get(key=key)


def test_a_rejected_proposal_is_closed_with_its_reason_and_audited(
    user: User, project: BacklogProject
) -> None:
    rejected = task_reject(task=task("docs"), reason="  Out of scope for v1  ", user=user)
    assert (rejected.status, rejected.reason) == ("rejected", "Out of scope for v1")
    row = AuditEvent.objects.filter(event_type="BacklogEvent", target="task shop/docs").last()
    assert row is not None and row.result == "rejected" and row.actor == user.username
    assert row.details["reason"] == "Out of scope for v1"
    assert row.details["previous"] == "proposed"
    # Terminal: neither accepted nor rejected again, nor reprioritised.
    for act in (lambda: task_accept(task=rejected, user=user),
                lambda: task_reject(task=rejected, reason="again", user=user),
                lambda: task_reprioritise(task=rejected, priority="high", user=user)):  # fmt: skip
        with pytest.raises(AcodeError) as refused:
            act()
        assert refused.value.code == "ACODE-BKL-001"


def test_rejecting_what_another_task_depends_on_is_refused_naming_it(
    user: User, project: BacklogProject
) -> None:
    with pytest.raises(AcodeError) as refused:
        task_reject(task=task("extra"), reason="No chatbot", user=user)
    assert refused.value.code == "ACODE-BKL-008"
    assert "polish" in refused.value.message
    assert task("extra").status == "proposed"
    # Once the dependent is rejected, the task it depended on may be.
    task_reject(task=task("polish"), reason="No chatbot", user=user)
    assert task_reject(task=task("extra"), reason="No chatbot", user=user).status == "rejected"


def test_rejected_tasks_count_as_closed_not_done(user: User, project: BacklogProject) -> None:
    for key in ("polish", "extra", "docs"):
        task_reject(task=task(key), reason="Not wanted", user=user)
    BacklogTask.objects.filter(key="hello").update(status=TaskStatus.DONE)
    assert list(completeness_due().values_list("slug", flat=True)) == ["shop"]
    BacklogTask.objects.filter(key="hello").update(status=TaskStatus.BACKLOG)
    assert not completeness_due().exists()  # hello is open; the rejected ones are not


def test_the_completeness_check_names_the_rejected_proposals_as_data(
    user: User, project: BacklogProject
) -> None:
    task_reject(task=task("docs"), reason="We ship no docs site", user=user)
    BacklogTask.objects.filter(key="hello").update(status=TaskStatus.DONE)
    BacklogTask.objects.filter(key__in=["extra", "polish"]).update(status=TaskStatus.REJECTED)
    assert completeness_checks() == ["shop"]
    project.refresh_from_db()
    assert project.pm_job is not None
    request = project.pm_job.request
    rejected = request.split("## Proposals rejected\n", 1)[1]
    assert rejected.startswith("<untrusted-data")
    assert "- docs: Write docs\n  rejected because: We ship no docs site" in rejected
    assert "Do not propose again what a person rejected" in request


def test_the_api_rejects_with_a_reason(api: APIClient, project: BacklogProject) -> None:
    answer = api.post(URL.format("docs"), {"reason": "Out of scope"}, format="json")
    assert answer.status_code == 200, answer.content
    assert (answer.json()["status"], answer.json()["reason"]) == ("rejected", "Out of scope")
    shown = api.get("/api/backlog/projects/shop/tasks/docs/").json()
    assert (shown["status"], shown["reason"]) == ("rejected", "Out of scope")


def test_the_api_refusals(api: APIClient, project: BacklogProject, django_user_model: Any) -> None:
    for body in ({}, {"reason": ""}, {"reason": "   "}, {"reason": "x" * 1001}):
        answer = api.post(URL.format("docs"), body, format="json")
        assert answer.status_code == 400, (body, answer.content)
    dependents = api.post(URL.format("extra"), {"reason": "no"}, format="json")
    assert dependents.status_code == 409
    assert dependents.json()["code"] == "ACODE-BKL-008" and "polish" in str(dependents.json())
    not_proposed = api.post(URL.format("hello"), {"reason": "no"}, format="json")
    assert (not_proposed.status_code, not_proposed.json()["code"]) == (409, "ACODE-BKL-001")
    assert api.post(URL.format("ghost"), {"reason": "no"}, format="json").status_code == 404

    lead = django_user_model.objects.create_user("lead", password="pw-lead-123")
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    stranger = django_user_model.objects.create_user("stranger", password="pw-s-123")
    other = APIClient()
    other.force_authenticate(lead)
    assert other.post(URL.format("docs"), {"reason": "no"}, format="json").status_code == 403
    other.force_authenticate(stranger)
    assert other.post(URL.format("docs"), {"reason": "no"}, format="json").status_code == 404
    assert task("docs").status == "proposed"


def test_the_kanban_offers_reject_and_lists_rejected_tasks_apart(
    user: User, project: BacklogProject, django_user_model: Any
) -> None:
    pushed = render_kanban(user, "shop")
    assert 'hx-post="/backlog/shop/tasks/docs/reject/"' in pushed
    assert 'name="reason" required maxlength="1000"' in pushed
    assert 'id="backlog-rejected"' in pushed
    client = Client()
    client.force_login(user)
    answer = client.post("/backlog/shop/tasks/docs/reject/", {"reason": "Not now"},
                         HTTP_HX_REQUEST="true")  # fmt: skip
    assert answer.status_code == 200
    page = answer.content.decode()
    assert 'data-task="docs" data-status="rejected"' in page and "Not now" in page
    assert 'id="backlog-col-proposed"' in page
    proposed = page.split('id="backlog-col-proposed"', 1)[1].split("</section>", 1)[0]
    assert 'id="task-docs"' not in proposed and 'id="task-extra"' in proposed
    assert task("docs").status == "rejected"

    blank = client.post("/backlog/shop/tasks/extra/reject/", {"reason": ""})
    assert blank.status_code == 302 and task("extra").status == "proposed"

    lead = django_user_model.objects.create_user("lead", password="pw-lead-123")
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    client.force_login(lead)
    page = client.get("/backlog/shop/").content.decode()
    assert "/reject/" not in page and "Not now" in page  # sees the list, not the control
    client.post("/backlog/shop/tasks/polish/reject/", {"reason": "no"})
    assert task("polish").status == "proposed"
