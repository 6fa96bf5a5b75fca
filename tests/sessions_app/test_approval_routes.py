"""Every route that approves changes binds the digest of what the approver saw: when the
pending changes differ (a change recorded after they looked), the route answers 409 (or
its tool refusal) and commits nothing. One table, every route: the API and CLI approval of
a session's changes, the Reviewer's ``submit_review`` (outside a run and inside one), and a
run's gate through the API, the dashboard and the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from roles.registry import registry
from sessions_app.agent.executor import tool_execute
from sessions_app.agent.tool_context import tool_context
from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    AuditEvent,
    DeliveredCommit,
    Job,
    PendingChange,
    RunStatus,
)
from sessions_app.services.changes import change_record, pending_digest
from sessions_app.services.jobs import job_create
from tests.cli.conftest import make_runner
from tests.sessions_app.guardkit import World, people, world_in

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass(frozen=True)
class Route:
    """An approval route: the world it acts in, and how it approves ``digest`` as ``who``.
    It returns what the person (or model) is told: (status or exit code, text)."""

    state: str
    approve: Callable[[World, str, Any], tuple[int, str]]
    refused: tuple[int, str]  # what a stale digest gets: status/exit code and ACODE code


def _api_changes(world: World, digest: str, _: Any) -> tuple[int, str]:
    client = APIClient()
    client.force_authenticate(world.owner)
    url = f"/api/sessions/{world.session.pk}/changes/approve/"
    response = client.post(url, {"digest": digest, "summary": "ok"}, format="json")
    return response.status_code, response.content.decode()


def _cli(world: World, who: Any, args: list[str], live: Any, tmp: Path) -> tuple[int, str]:
    token = Token.objects.create(user=who).key
    cli = make_runner(live.url, token, tmp / f"cli-{who.username}")
    result = cli(*args)
    return result.exit_code, result.output


def _cli_changes(world: World, digest: str, env: Any) -> tuple[int, str]:
    args = ["changes", "approve", "--session", str(world.session.pk), "--digest", digest]
    return _cli(world, world.owner, args, *env)


def _review_tool(world: World, digest: str, _: Any) -> tuple[int, str]:
    """The Reviewer approves through ``submit_review``, having been shown ``digest``."""
    session = AgentSession.objects.get(pk=world.session.pk)
    if world.run is not None:  # the run's review stage's job
        job = Job.objects.filter(run_stage__run=world.run, role__slug="reviewer").latest(
            "created_at"
        )
    else:
        job = job_create(session=session, request="Review", user=world.owner)
    context = tool_context(job, session, [])
    context.review.shown = digest
    registry.sync()
    outcome = tool_execute(
        session=session, role=registry.get("reviewer"), tool="submit_review",
        arguments={"verdict": "approve", "summary": "fine"}, actor="job:t", context=context,
        job=job,
    )  # fmt: skip
    return (409 if outcome.status == "denied" else 200), f"{outcome.code} {outcome.reason}"


def _gate_digest(world: World) -> str:
    return world.digest  # the approval request the person saw


def _api_gate(world: World, digest: str, _: Any) -> tuple[int, str]:
    client = APIClient()
    client.force_authenticate(world.approver)
    response = client.post(f"/api/runs/{world.run.pk}/approve/", {"digest": digest}, format="json")
    return response.status_code, response.content.decode()


def _dashboard_gate(world: World, digest: str, _: Any) -> tuple[int, str]:
    client = Client()
    client.force_login(world.approver)
    url = reverse("dashboard-run-approve", args=[world.run.pk])
    response = client.post(url, {"digest": digest}, HTTP_HX_REQUEST="true")
    text = response.content.decode()
    return (409 if "ACODE-RUN-011" in text else response.status_code), text


def _cli_gate(world: World, digest: str, env: Any) -> tuple[int, str]:
    args = ["run", "approve", str(world.run.pk), "--digest", digest]
    return _cli(world, world.approver, args, *env)


ROUTES = {
    "POST /api/sessions/{id}/changes/approve/": Route("none", _api_changes, (409, "ACODE-CHG-002")),
    "acode changes approve": Route("none", _cli_changes, (4, "ACODE-CHG-002")),
    "submit_review (no run)": Route("none", _review_tool, (409, "ACODE-CHG-002")),
    "submit_review (in a run)": Route("awaiting_approval", _review_tool, (409, "ACODE-CHG-002")),
    "POST /api/runs/{id}/approve/ (gate)": Route("awaiting_approval", _api_gate, (409, "ACODE-RUN-011")),
    "dashboard gate": Route("awaiting_approval", _dashboard_gate, (409, "ACODE-RUN-011")),
    "acode run approve (gate)": Route("awaiting_approval", _cli_gate, (4, "ACODE-RUN-011")),
}  # fmt: skip


def _seen(world: World, route: Route) -> str:
    """The digest the approver was shown: the gate's request, or the changes' digest."""
    if route.approve in (_api_gate, _dashboard_gate, _cli_gate):
        return _gate_digest(world)
    return pending_digest(world.session)


def _change_after_they_looked(world: World) -> None:
    run_id = world.run.pk if world.run is not None and world.run.status != "finished" else None
    change_record(
        session=world.session, path="late.py", kind="created", diff="+late\n",
        actor="someone", run_id=run_id,
    )  # fmt: skip


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_approval_route_refuses_a_stale_digest(
    name: str, django_user_model: Any, settings: Any, live_server: Any, tmp_path: Path
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    route = ROUTES[name]
    world = world_in(route.state, *people(django_user_model))
    seen = _seen(world, route)
    _change_after_they_looked(world)
    pending = set(PendingChange.objects.filter(session=world.session).values_list("path", "kind"))
    verdicts = _verdicts(world)
    status, text = route.approve(world, seen, (live_server, tmp_path))
    assert (status, route.refused[1] in text) == (route.refused[0], True), text[-1500:]
    # Nothing was approved: the changes stay pending, nothing committed or delivered.
    after = set(PendingChange.objects.filter(session=world.session).values_list("path", "kind"))
    assert after == pending and ("late.py", "created") in after
    assert not DeliveredCommit.objects.filter(session=world.session).exists()
    assert not AuditEvent.objects.filter(
        session=world.session, event_type="ChangesApproved"
    ).exists()
    if world.run is not None:
        world.run.refresh_from_db()
        assert world.run.status == RunStatus.AWAITING_APPROVAL
    assert _verdicts(world) == verdicts  # a refused review records no verdict


def _verdicts(world: World) -> list[Any]:
    if world.run is None:
        return []
    return list(world.run.stages.order_by("seq").values_list("verdict", flat=True))


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_approval_route_approves_the_digest_it_was_shown(
    name: str, django_user_model: Any, settings: Any, live_server: Any, tmp_path: Path
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    route = ROUTES[name]
    world = world_in(route.state, *people(django_user_model))
    status, text = route.approve(world, _seen(world, route), (live_server, tmp_path))
    assert status in (0, 200), text[-1500:]
    if name == "submit_review (in a run)":  # the run commits when its gate is approved
        stage = world.run.stages.filter(purpose="review").latest("seq")
        assert stage.verdict["digest"] == pending_digest(world.session)
        return
    assert not PendingChange.objects.filter(session=world.session).exists()
    approved = AuditEvent.objects.get(session=world.session, event_type="ChangesApproved")
    assert approved.result == "1 approved"
    if world.run is not None:
        world.run.refresh_from_db()
        assert world.run.status == RunStatus.SUCCEEDED
        assert world.run.approvals.filter(status=ApprovalStatus.APPROVED).exists()
        assert json.dumps(approved.details["committed"]) != "{}"
