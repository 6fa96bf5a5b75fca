"""One guard for every action on a session during a run: every route and service that
changes a session, against every run state.

The tables below hold every mutating API operation (from the OpenAPI schema), every
dashboard view that takes a POST, every admin form that edits a session's rows, and every
service that changes a session; one that is in none of them fails
``test_every_*_is_in_the_table``. Each cell starts from a session in one run state
(``guardkit``), takes the action as a person would, and checks the answer: the action
succeeds outside a run; during a run only the run changes the session (409
ACODE-RUN-003, and nothing is written: no pending change cleared, no commit, no job, no
transition, no audit row but an audited refusal where the product audits refusals), and
the run's own actions (answer, approve, reject, cancel) need it in the right status.
Who may act (the 401/403/404 of each route) is tests/api/test_authorization_matrix.py.
"""

from __future__ import annotations

import inspect
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory
from django.urls import URLPattern, reverse
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from acode.error_codes import ERROR_CODES
from sessions_app import urls as api_urls
from sessions_app.apis.common import SessionActionApi
from sessions_app.containment.writes import RecordedWrite
from sessions_app.dashboard import urls as dashboard_urls
from sessions_app.models import AgentSession
from sessions_app.services import (
    archive,
    changes,
    deliveries,
    job_recovery,
    jobs,
    locks,
    plans,
    runs,
    sessions,
    transitions,
    workspaces,
)
from sessions_app.services.changes import pending_digest
from tests.sessions_app.guardkit import (
    ACTIVE,
    STATES,
    World,
    assert_nothing_written,
    people,
    world_in,
    written,
)

pytestmark = pytest.mark.django_db

OK = "ok"
RUN_OWNS = "ACODE-RUN-003"  # only the executing run changes the session
NOT_NOW = "ACODE-RUN-004"  # the run is not in the status the action needs
NO_RUN = None  # the action is on a run, and there is none

# What happens to each kind of action in each run state.
SESSION_OWNED = {"none": OK, "finished": OK} | dict.fromkeys(ACTIVE, RUN_OWNS)
ONE_RUN = {"none": OK, "finished": OK} | dict.fromkeys(ACTIVE, "ACODE-RUN-002")
ANSWER = {"none": NO_RUN, "finished": NOT_NOW} | dict.fromkeys(ACTIVE, NOT_NOW)
ANSWER |= {"awaiting_input": OK, "blocked": OK}
DECIDE = {"none": NO_RUN, "finished": NOT_NOW} | dict.fromkeys(ACTIVE, NOT_NOW)
DECIDE |= {"awaiting_approval": OK}
CANCEL = {"none": NO_RUN, "finished": NOT_NOW} | dict.fromkeys(ACTIVE, OK)
# Archiving waits for the session to be idle, and every world holds a queued job
# (tests/sessions_app/apis/test_archive.py archives idle ones); restoring a session that is
# not archived changes nothing.
IDLE = {"none": "ACODE-SES-008", "finished": "ACODE-SES-008"} | dict.fromkeys(
    ACTIVE, "ACODE-SES-008"
)
ANY_TIME = {"none": OK, "finished": OK} | dict.fromkeys(ACTIVE, OK)
# Every world's job is queued or running, not stopped at a limit: resuming it is refused
# before anything (tests/sessions_app/agent/test_job_resume.py resumes a stopped one).
RESUME = {"none": "ACODE-JOB-013", "finished": "ACODE-JOB-013"}
RESUME |= dict.fromkeys(ACTIVE, "ACODE-JOB-013")

TRANSITION_DENIED = "TransitionDenied"  # a refused transition is audited
RUN_DECISION = "RunDecision"  # so is a refused decision at a run's gate


@dataclass(frozen=True)
class Action:
    """One route or service: what it answers in each state, who takes it, how."""

    expected: dict[str, str | None]
    body: Callable[[World], dict[str, Any]] = lambda world: {}
    by: str = "owner"  # or "approver": approving and rejecting at a gate
    audited_as: str = ""  # the audit event type of its refusals, if they are audited
    extra: dict[str, Any] = field(default_factory=dict)

    def refusal_rows(self, code: str) -> set[tuple[str, str]]:
        return {(self.audited_as, code)} if self.audited_as else set()


def _digest(world: World) -> dict[str, Any]:
    return {"digest": world.digest}


# -- the API ------------------------------------------------------------------------------

API: dict[str, Action] = {
    "PATCH /api/sessions/{id}/": Action(SESSION_OWNED, lambda w: {"title": "Renamed"}),
    "POST /api/sessions/{id}/archive/": Action(IDLE),
    "POST /api/sessions/{id}/restore/": Action(ANY_TIME),
    "POST /api/sessions/{id}/transition/": Action(
        SESSION_OWNED,
        lambda w: {"to_role": "coder", "reason": "By hand"},
        audited_as=TRANSITION_DENIED,
    ),
    "PUT /api/sessions/{id}/plan/": Action(SESSION_OWNED, lambda w: {"steps": ["By hand"]}),
    "PATCH /api/sessions/{id}/plan/steps/{number}/": Action(
        SESSION_OWNED, lambda w: {"status": "done"}
    ),
    "POST /api/sessions/{id}/changes/": Action(
        SESSION_OWNED, lambda w: {"path": "b.py", "kind": "created", "diff": "+b"}
    ),
    "POST /api/sessions/{id}/changes/approve/": Action(
        SESSION_OWNED, lambda w: {"summary": "Looks right", "digest": pending_digest(w.session)}
    ),
    "POST /api/sessions/{id}/jobs/": Action(SESSION_OWNED, lambda w: {"request": "Explain"}),
    "POST /api/jobs/{id}/cancel/": Action(SESSION_OWNED),
    "POST /api/jobs/{id}/resume/": Action(RESUME),
    "POST /api/sessions/{id}/runs/": Action(
        ONE_RUN, lambda w: {"request": "Another greeting", "template": "guarded"}
    ),
    "POST /api/runs/{id}/answer/": Action(ANSWER, lambda w: {"answer": "English"}),
    "POST /api/runs/{id}/approve/": Action(DECIDE, _digest, by="approver", audited_as=RUN_DECISION),
    "POST /api/runs/{id}/reject/": Action(
        DECIDE, lambda w: {"reason": "Not now"}, by="approver", audited_as=RUN_DECISION
    ),
    "POST /api/runs/{id}/cancel/": Action(CANCEL),
}
# Mutating operations that change no existing session, so no run can hold them.
API_NOT_ON_A_SESSION = {
    "POST /api/auth/token/": "logging in",
    "DELETE /api/auth/token/": "logging out",
    "POST /api/sessions/": "opens a new session: no run executes in it yet",
    "POST /api/roles/": "role definitions (roles app, versioned; a run's digest names them)",
    "PATCH /api/roles/{name}/": "role definitions",
    "POST /api/roles/test/": "runs role examples against a document; writes nothing",
    "POST /api/roles/{name}/replay/": "replays recorded decisions under a draft; writes nothing",
    "DELETE /api/roles/{name}/": "role definitions",
    "POST /api/roles/import/": "role definitions",
    "POST /api/role-drafts/{id}/publish/": "role definitions (a protected role's draft)",
    "POST /api/role-drafts/{id}/reject/": "a protected role's draft; no live role data",
    "POST /api/workflows/import/": "workflow templates (a run keeps its own stages)",
    "POST /api/model-endpoints/{name}/check/": "probes a model server; changes no session",
    "POST /api/roles/{name}/check/": "decides a call on role data; runs and writes nothing",
    "PUT /api/model-endpoints/{name}/": "model endpoints (roles app data); changes no session",
    "POST /api/mcp-servers/": "MCP server registrations (roles app; offered only once approved)",
    "PATCH /api/mcp-servers/{slug}/": "MCP server registrations",
    "DELETE /api/mcp-servers/{slug}/": "MCP server registrations",
    "POST /api/mcp-servers/{slug}/refresh/": "pins a server's tool definitions (roles app)",
    "POST /api/mcp-servers/{slug}/tools/{tool}/approve/": "pinned definitions; roles versioned",
    "POST /api/roles/{name}/argument-limits/": "role argument limits (a new role version)",
    "POST /api/backlog/projects/": "a backlog (issue 40): its runs start through run_start",
    "POST /api/backlog/projects/{slug}/import/": "a backlog's tasks; no session yet",
    "POST /api/backlog/projects/{slug}/tasks/{key}/accept/": "a backlog task's status",
    "POST /api/backlog/projects/{slug}/tasks/{key}/reject/": "a backlog task's status",
    "POST /api/backlog/projects/{slug}/tasks/{key}/unblock/": "a backlog task's status (its "
    "next run starts through run_start)",
    "POST /api/backlog/projects/{slug}/tasks/{key}/priority/": "a backlog task's priority",
    "POST /api/backlog/projects/{slug}/plan/": "a backlog's spec; the Product Manager's job "
    "goes through job_create's guard in the project's own session",
    "PATCH /api/roles/{name}/argument-limits/{tool}/": "role argument limits (new version)",
    "DELETE /api/roles/{name}/argument-limits/{tool}/": "role argument limits (new version)",
    # A job's question about one call (a rule's "outcome": "ask"): a run's stage job asks
    # too, so a person answers it whatever the run's state (permissions.CONSENT_ANSWER).
    "POST /api/sessions/{id}/consents/{consent_id}/": "answers a job's question, not the session",
    # A read with a body (the query); at most it queues a build of the workspace's index.
    "POST /api/sessions/{id}/search/": "searches the workspace's index; changes no session",
    # An outside agent's hook event (issue 43): decided in and audited to that agent's own
    # session, created by its first event; it never changes a role, a plan or changes.
    "POST /api/hooks/{agent}/": "an outside agent's event, recorded in its own session",
    "POST /api/hook-tokens/": "a hook token of the caller; changes no session",
    "DELETE /api/hook-tokens/{token_id}/": "revokes a hook token of the caller",
    # Issue 41: a custom agent is role data; a remembered answer is revoked by an admin.
    "POST /api/agents/": "custom agents (a read-only role; roles app data)",
    "DELETE /api/agents/{role}/": "deletes a custom agent (roles app data; refused while used)",
    "POST /api/remembered-answers/{answer_id}/revoke/": "decision memory; an admin's, no run's",
}


def mutating_operations() -> set[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method in operations
        if method.upper() not in ("GET", "HEAD", "OPTIONS")
    }


def test_every_mutating_api_operation_is_in_the_table() -> None:
    assert mutating_operations() == set(API) | set(API_NOT_ON_A_SESSION)
    assert not set(API) & set(API_NOT_ON_A_SESSION)


def test_every_api_view_on_a_session_job_or_run_asks_the_one_decision() -> None:
    """A route naming a session, job or run is a ``SessionActionApi``: it finds the object
    with ``permissions.session_for`` (``run_for``, ``job_for``) for its method's action
    (reads as ``SessionAction.VIEW``), and each method that changes something names it."""
    for pattern in api_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if "<uuid:pk>" not in str(pattern.pattern):
            continue
        view = pattern.callback.view_class
        assert issubclass(view, SessionActionApi), pattern.name
        changing = {m.upper() for m in ("post", "put", "patch", "delete") if hasattr(view, m)}
        assert changing == set(view.actions), pattern.name


def _api_url(operation: str, world: World) -> str:
    path = operation.split(" ", 1)[1]
    if path.startswith("/api/runs/"):
        assert world.run is not None
        own = world.run.pk
    elif path.startswith("/api/jobs/"):
        own = world.job.pk
    else:
        own = world.session.pk
    return path.replace("{id}", str(own)).replace("{number}", "1")


def _user(world: World, by: str) -> Any:
    return {"owner": world.owner, "approver": world.approver, "lead": world.lead}[by]


def _check(outcome: str | None, status: int, code: str | None, what: str) -> None:
    assert outcome is not None
    if outcome == OK:
        assert status in (200, 201) and code is None, f"{what}: {status} {code}"
    else:
        assert (status, code) == (ERROR_CODES[outcome].http_status, outcome), what


def _cell(action: Action, state: str, people_: tuple[Any, Any, Any]) -> World | None:
    if action.expected[state] is NO_RUN:
        pytest.skip("an action on a run, and there is no run")
    return world_in(state, *people_)


@pytest.fixture
def cast_(django_user_model: Any, settings: Any) -> tuple[Any, Any, Any]:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed
    return people(django_user_model)


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("operation", sorted(API))
def test_api_route_in_every_run_state(operation: str, state: str, cast_: Any) -> None:
    action = API[operation]
    world = _cell(action, state, cast_)
    assert world is not None
    client = APIClient()
    client.force_authenticate(_user(world, action.by))
    method = operation.split(" ", 1)[0]
    url = _api_url(operation, world)
    before = written(world)
    response = client.generic(method, url, json.dumps(action.body(world)), "application/json")
    body = response.json()
    code = body.get("code") if response.status_code >= 400 else None
    expected = action.expected[state]
    _check(expected, response.status_code, code, f"{operation} in {state}: {body}")
    if expected != OK:
        assert expected is not None
        assert_nothing_written(before, written(world), action.refusal_rows(expected))


def test_approving_changes_through_the_api_at_a_run_gate_bypasses_nothing(cast_: Any) -> None:
    """The attack of issue 22: while a run waits at its gate, its starter (who holds the
    Reviewer's approve_changes) posts the changes' approval directly."""
    world = world_in("awaiting_approval", *cast_)
    client = APIClient()
    client.force_authenticate(world.owner)
    before = written(world)
    response = client.post(
        f"/api/sessions/{world.session.pk}/changes/approve/",
        {"summary": "mine", "digest": pending_digest(world.session)},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["code"] == RUN_OWNS
    assert response.json()["details"]["run"] == str(world.session.active_run_id)
    assert_nothing_written(before, written(world), set())
    assert before["changes"] == [("greet.py", "created", before["changes"][0][2])]


# -- the dashboard ------------------------------------------------------------------------

HX = {"HTTP_HX_REQUEST": "true"}
DASHBOARD: dict[str, Action] = {
    "dashboard-session-transition": Action(
        SESSION_OWNED,
        lambda w: {"to_role": "coder", "reason": "By hand"},
        audited_as=TRANSITION_DENIED,
    ),
    "dashboard-run-start": Action(ONE_RUN, lambda w: {"request": "Another greeting"}),
    "dashboard-run-answer": Action(ANSWER, lambda w: {"answer": "English"}),
    "dashboard-run-approve": Action(
        DECIDE, lambda w: {"digest": w.digest, "reason": ""}, by="approver", audited_as=RUN_DECISION
    ),
    "dashboard-run-reject": Action(
        DECIDE, lambda w: {"reason": "Not now"}, by="approver", audited_as=RUN_DECISION
    ),
    "dashboard-run-cancel": Action(CANCEL),
    "dashboard-session-archive": Action(IDLE),
    "dashboard-job-resume": Action(RESUME),
}
DASHBOARD_NOT_ON_A_SESSION = {
    "dashboard-session-new": "opens a new session",
    "dashboard-consent-answer": "answers a job's question about one call, not the session",
    "dashboard-agents": "makes a custom agent (role data), not on a session",
    "dashboard-backlog-action": "a backlog task's status or priority (issue 40), not a session",
    "dashboard-backlog-plan": "a backlog's spec (its Product Manager job: job_create's guard)",
}


def _dashboard_kwargs(pattern: URLPattern, world: World) -> dict[str, Any]:
    route = str(pattern.pattern)
    kwargs: dict[str, Any] = {}
    if "<uuid:pk>" in route:
        kwargs["pk"] = world.run.pk if route.startswith("runs/") and world.run else world.session.pk
        kwargs["pk"] = world.job.pk if route.startswith("jobs/") else kwargs["pk"]
    if "<uuid:job_id>" in route:
        kwargs["job_id"] = world.job.pk
    if "<uuid:consent_id>" in route:
        kwargs["consent_id"] = uuid.uuid4()  # none: the answer is a message, nothing changes
    for name in ("slug", "key", "action"):  # a backlog's: none such, nothing changes
        if f"<slug:{name}>" in route or f"<str:{name}>" in route:
            kwargs[name] = "none"
    return kwargs


def test_every_dashboard_view_taking_a_post_is_in_the_table(cast_: Any) -> None:
    """A view that does not refuse a POST (405) changes something: it must be listed."""
    world = world_in("awaiting_approval", *cast_)
    client = Client()
    client.force_login(world.lead)
    takes_post = set()
    for pattern in dashboard_urls.urlpatterns:
        assert isinstance(pattern, URLPattern) and pattern.name
        url = reverse(pattern.name, kwargs=_dashboard_kwargs(pattern, world))
        if pattern.name in DASHBOARD:
            continue  # (posting would act)
        if client.post(url, {}).status_code != 405:
            takes_post.add(pattern.name)
    assert takes_post == set(DASHBOARD_NOT_ON_A_SESSION)
    names = {p.name for p in dashboard_urls.urlpatterns if isinstance(p, URLPattern)}
    assert set(DASHBOARD) <= names


CODE_SHOWN = re.compile(r'(?:data-code="|class="message-code">)(ACODE-[A-Z]+-\d+)')


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("name", sorted(DASHBOARD))
def test_dashboard_view_in_every_run_state(name: str, state: str, cast_: Any) -> None:
    action = DASHBOARD[name]
    world = _cell(action, state, cast_)
    assert world is not None
    client = Client()
    client.force_login(_user(world, action.by))
    pattern = next(p for p in dashboard_urls.urlpatterns if getattr(p, "name", "") == name)
    assert isinstance(pattern, URLPattern)
    url = reverse(name, kwargs=_dashboard_kwargs(pattern, world))
    before = written(world)
    if name in (
        "dashboard-session-transition",
        "dashboard-session-archive",
        "dashboard-job-resume",
    ):
        response = client.post(url, action.body(world), follow=True)
    else:
        response = client.post(url, action.body(world), **HX)
    html = response.content.decode()
    shown = CODE_SHOWN.findall(html)
    expected = action.expected[state]
    assert response.status_code == 200
    if expected == OK:
        assert shown == [], f"{name} in {state}: {shown}"
    else:
        assert expected is not None
        assert set(shown) == {expected}, f"{name} in {state}: {shown}"
        assert_nothing_written(before, written(world), action.refusal_rows(expected))


# -- admin --------------------------------------------------------------------------------

ADMIN: dict[str, Action] = {"agentsession": Action(SESSION_OWNED, by="lead")}
ADMIN_NOT_ON_A_SESSION = {
    "repository": "repositories sessions may clone",
    "workflowtemplate": "workflow templates (a run keeps its own stages)",
    "risksignal": "risk signals",
    "secretrule": "a team's secret rules (what the detector hides in every workspace)",
    "backlogproject": "a backlog's settings (its runs start through run_start's guard)",
    "epic": "a backlog's epics",
    "backlogtask": "a backlog's tasks (status and priority only through its services)",
}


def _admin_request(world: World) -> Any:
    request = RequestFactory().post("/admin/")
    request.user = world.lead
    return request


def test_every_admin_form_that_edits_session_rows_is_in_the_table(cast_: Any) -> None:
    world = world_in("none", *cast_)
    request = _admin_request(world)
    editable = {
        model._meta.model_name
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label == "sessions_app"
        and (
            model_admin.has_add_permission(request)
            or model_admin.has_change_permission(request)
            or model_admin.has_delete_permission(request)
        )
    }
    assert editable == set(ADMIN) | set(ADMIN_NOT_ON_A_SESSION)


@pytest.mark.parametrize("state", STATES)
def test_admin_session_form_in_every_run_state(state: str, cast_: Any) -> None:
    world = world_in(state, *cast_)
    request = _admin_request(world)
    model_admin = admin.site._registry[AgentSession]
    session = AgentSession.objects.get(pk=world.session.pk)
    form_class = model_admin.get_form(request, session, change=True)
    data = {
        "title": "Renamed in admin",
        "task": session.task,
        "status": session.status,
        "risk_tier": session.risk_tier,
    }
    form = form_class(data=data, instance=session)
    before = written(world)
    expected = ADMIN["agentsession"].expected[state]
    if expected == OK:
        assert form.is_valid(), form.errors
        model_admin.save_model(request, form.save(commit=False), form, True)
        assert AgentSession.objects.get(pk=session.pk).title == "Renamed in admin"
    else:
        assert not form.is_valid()
        assert f"{expected}:" in str(form.errors)
        assert_nothing_written(before, written(world), set())


# -- the services -------------------------------------------------------------------------


def _on_run(world: World) -> Any:
    assert world.run is not None
    return world.run


SERVICES: dict[str, tuple[Action, Callable[[World], object]]] = {
    "session_archive": (
        Action(IDLE),
        lambda w: archive.session_archive(session=w.session, user=w.owner),
    ),
    "session_restore": (
        Action(ANY_TIME),
        lambda w: archive.session_restore(session=w.session, user=w.owner),
    ),
    "session_update": (
        Action(SESSION_OWNED),
        lambda w: sessions.session_update(session=w.session, data={"title": "X"}, user=w.owner),
    ),
    "session_transition": (
        Action(SESSION_OWNED, audited_as=TRANSITION_DENIED),
        lambda w: transitions.session_transition(
            session=w.session, to_role="coder", reason="By hand", user=w.owner
        ),
    ),
    "plan_set": (
        Action(SESSION_OWNED),
        lambda w: plans.plan_set(session=w.session, steps=["By hand"], user=w.owner),
    ),
    "plan_step_update": (
        Action(SESSION_OWNED),
        lambda w: plans.plan_step_update(session=w.session, number=1, status="done", user=w.owner),
    ),
    "change_record": (
        Action(SESSION_OWNED),
        lambda w: changes.change_record(
            session=w.session, path="b.py", kind="created", diff="+b", user=w.owner
        ),
    ),
    # A tool's edit, from a job that is not one of the run's stages.
    "change_track": (
        Action(SESSION_OWNED),
        lambda w: changes.change_track(
            session=w.session,
            write=RecordedWrite("c.py", None, "c = 1\n", "0" * 40, 0o100644),
            actor="job:stray",
        ),
    ),
    "changes_approve": (
        Action(SESSION_OWNED),
        lambda w: changes.changes_approve(
            session=w.session, summary="Mine", user=w.owner, digest=pending_digest(w.session)
        ),
    ),
    "changes_commit": (
        Action(SESSION_OWNED),
        lambda w: changes.changes_commit(
            session=w.session, summary="Mine", actor="someone", digest=pending_digest(w.session)
        ),
    ),
    "job_create": (
        Action(SESSION_OWNED),
        lambda w: jobs.job_create(session=w.session, request="Explain", user=w.owner),
    ),
    "job_cancel": (
        Action(SESSION_OWNED),
        lambda w: jobs.job_cancel(job=w.job, user=w.owner),
    ),
    "job_resume": (
        Action(RESUME),
        lambda w: jobs.job_resume(job=w.job, user=w.owner),
    ),
    "run_start": (
        Action(ONE_RUN),
        lambda w: runs.run_start(
            session=w.session, request="Another", user=w.owner, template="guarded"
        ),
    ),
    "run_answer": (
        Action(ANSWER),
        lambda w: runs.run_answer(run=_on_run(w), answer="English", user=w.owner),
    ),
    "run_approve": (
        Action(DECIDE, audited_as=RUN_DECISION),
        lambda w: runs.run_approve(run=_on_run(w), user=w.approver, digest=w.digest),
    ),
    "run_reject": (
        Action(DECIDE, audited_as=RUN_DECISION),
        lambda w: runs.run_reject(run=_on_run(w), user=w.approver, reason="Not now"),
    ),
    "run_cancel": (
        Action(CANCEL),
        lambda w: runs.run_cancel(run=_on_run(w), user=w.owner),
    ),
}
# Public functions of the services that change no session on a person's behalf.
SERVICES_NOT_ACTIONS = {
    "lock_session": "a helper",
    "git_checked": "a helper (git on a session's git directory)",
    "workspace_prepare": "a helper (what acode keeps beside a new checkout)",
    "workspace_free": "session_archive's (the files it frees, once committed)",
    "workspace_restore": "session_restore's (the checkout it brings back, under its lock)",
    "layers_sweep": "a worker freeing its host's layers of sessions already archived",
    "lock_job": "a helper (the job row, inside the calling service's transaction)",
    "lock_session_found": "a helper (an outside agent's session found and locked at once)",
    "template_chosen": "a read (the template a run of a request would use)",
    "session_create": "opens a new session",
    "precondition_unmet": "a read",
    "transitions_from": "a read",
    "transition_decide": "the transition's decision; asks now_refusal",
    "job_event": "a job's own events, written by whoever runs or cancels it",
    "job_start": "the worker that runs the job",
    "job_heartbeat": "the worker that runs the job",
    "job_record_usage": "the worker that runs the job",
    "job_finish": "the worker that runs the job (or job_cancel)",
    "jobs_resend_queued": "redelivery of jobs already queued",
    "jobs_recover_stale": "redelivery of jobs already queued",
    "job_queue": "a read",
    "job_stale": "a read",
    "job_enqueue_later": "a helper (sends a queued job's message after commit)",
    "held_session": "a read (the session row the calling service holds locked)",
    "job_queue_consumed": "a read",
    "session_branch": "a name",
    "repository_for": "a read (opening a session)",
    "workspace_attach": "opening a session",
    "workspace_create": "opening a session",
    "workspace_commit": "changes_commit's writer, behind its guard",
    "workspace_patch": "a read",
    "workspace_commit_patch": "a read",
    "masked_remote": "a helper",
    "branch_push": "workspace_push's git; the backlog's push of its integration branch",
    "workspace_push": "delivered_commit_push's git, after the commit (the branch only)",
    "diff_stat": "a helper",
    "delivered_commit_record": "changes_commit's record of its commit, behind its guard",
    "delivered_applied_record": "changes_commit's record of an approval in an attached directory",
    "delivered_commit_push": "the worker pushing a commit already made: no session state, its "
    "own audit row",
    "deliveries_push_stalled": "redelivery of pushes already queued",
    "approval_digest": "a read",
    "run_advance": "the run's engine itself",
    "run_after_job": "the run's engine itself",
    "runs_resume_stalled": "the run's engine itself",
    "run_question_ask": "a stage's job reporting to its own run",
    "run_review_record": "a stage's job reporting to its own run",
    "stage_request": "a read",
    "plan_notes": "a pure function (a Planner's answer read for complexity and risks)",
    "runs_seed_defaults": "seeds workflow templates",
    "git_dir_of": "a name",
    "session_git_dir": "a read (moves a legacy .git out of the workspace, once)",
    "attached_git_dir": "a read",
    "workspace_writer": "the tools' writer: every change it makes is recorded by change_track",
    "pending_digest": "a read",
    "pending_snapshot": "a read",
    "changes_digest": "a pure function",
    "changes_check_digest": "a check the approving services make under their lock",
    "require_broker": "a read (is the broker reachable)",
    "job_stop": "the run's engine stopping its own stage's queued job (the cancel of the run "
    "was checked)",
    "job_expire": "the run's engine failing its own stage's job when the run's budget is spent",
    "history_start": "the first history entry of a session being created (session_create, an "
    "outside agent's first event)",
}


def _public_functions(module: ModuleType) -> set[str]:
    exported = getattr(module, "__all__", None)
    if exported is not None:
        return set(exported)
    return {
        name
        for name, value in vars(module).items()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and not name.startswith("_")
    }


def test_every_service_is_in_the_table() -> None:
    found: set[str] = set()
    for module in (
        sessions, locks, transitions, plans, changes, deliveries, jobs, job_recovery,
        workspaces, runs, archive,
    ):  # fmt: skip
        found |= _public_functions(module)
    assert found == set(SERVICES) | set(SERVICES_NOT_ACTIONS)


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("name", sorted(SERVICES))
def test_service_in_every_run_state(name: str, state: str, cast_: Any) -> None:
    from acode.errors import AcodeError

    action, call = SERVICES[name]
    world = _cell(action, state, cast_)
    assert world is not None
    before = written(world)
    expected = action.expected[state]
    if expected == OK:
        call(world)
        return
    assert expected is not None
    with pytest.raises(AcodeError) as refused:
        call(world)
    assert refused.value.code == expected
    assert_nothing_written(before, written(world), action.refusal_rows(expected))
