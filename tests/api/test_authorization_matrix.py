"""Who may do what: every operation in the OpenAPI schema against every kind of caller.

Rows come from the generated schema, so an endpoint without a row here fails
``test_every_operation_has_a_row``. Each cell runs against the same world as built (see
``built_world``): ``owner`` has a
session in Reviewer with a plan, a pending change and a queued job, and a second session
whose run waits at its approval gate. A refused write
(401, 403, 404) must change nothing, and ``other`` must never see any of the owner's data.
Who may see and act is decided in ``sessions_app/permissions.py``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.db import transaction
from django.db.models import Model
from django.test import override_settings
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from roles.models import (
    McpArgumentLimit,
    McpServer,
    McpToolDefinition,
    ModelEndpoint,
    Role,
    RoleVersion,
)
from roles.services import role_write
from roles.services.agents import custom_agent_create
from roles.services.mcp import mcp_definitions_record
from sessions_app.models import (
    AgentSession,
    AuditEvent,
    BacklogTask,
    IdempotencyRecord,
    Job,
    PendingChange,
    RememberedAnswer,
    RoleTransition,
    Run,
    RunApproval,
    ToolConsent,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.services.backlog import backlog_import, project_create
from sessions_app.services.changes import change_record, pending_digest
from sessions_app.services.jobs import job_create
from sessions_app.services.outside.tokens import hook_token_create
from sessions_app.services.plans import plan_set
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from tests.factories import make_role
from tests.xdist_isolation import STATE_ROOTS  # where sessions keep their files

# Who may call each route is decided the same on either database: CI runs the matrix on
# PostgreSQL only (tests/conftest.py, db_agnostic).
pytestmark = [pytest.mark.django_db, pytest.mark.db_agnostic]

ACTORS = ["anonymous", "owner", "other", "viewer", "actor", "auditor", "superuser"]
PERMISSIONS = {
    "viewer": "view_all_sessions",
    "actor": "act_on_all_sessions",
    "auditor": "view_auditevent",
}
SECRET = "Secret project 7f3a"  # the session's title; only those who may see it do

# A session's data: those who may see it (owner, view_all, act_on_all, superuser) read it,
# everyone else gets the same 404 as for a session that does not exist.
SESSION_READ = {
    "anonymous": 401,
    "owner": 200,
    "other": 404,
    "viewer": 200,
    "actor": 200,
    "auditor": 404,
    "superuser": 200,
}
# Acting on it: seeing without acting is 403.
SESSION_WRITE = {**SESSION_READ, "viewer": 403}
MAY_ACT = ("owner", "actor", "superuser")
SESSION_CREATE = {**SESSION_WRITE, "owner": 201, "actor": 201, "superuser": 201}
# Not about one session: every authenticated caller, each seeing what is theirs to see.
ANY_USER = {actor: 200 for actor in ACTORS} | {"anonymous": 401}
# Role definitions: Django's model permissions, which only the superuser holds here.
ROLE_ADMIN = {actor: 403 for actor in ACTORS} | {"anonymous": 401, "superuser": 200}
# Deciding at a run's gate: approve_run (only the superuser here) and sight of the session;
# the owner started the run and holds no approve_run.
RUN_DECIDE = SESSION_READ | {"owner": 403, "viewer": 403, "actor": 403}
# Workflow export and import: staff.
STAFF = ROLE_ADMIN

EXPECTED: dict[str, dict[str, int]] = {
    "POST /api/auth/token/": {actor: 200 for actor in ACTORS},  # logging in needs no login
    "DELETE /api/auth/token/": ANY_USER | {actor: 204 for actor in ACTORS[1:]},
    "GET /api/me/": ANY_USER,
    # Custom agents (issue 41): each user lists theirs; creating one needs roles.configure
    # (only the superuser here).
    "GET /api/agents/": ANY_USER,
    "POST /api/agents/": ROLE_ADMIN | {"superuser": 201},
    # Deleting one: its maker (the superuser here) or a role admin; to anyone else who
    # cannot see it, unknown.
    "DELETE /api/agents/{role}/": {actor: 404 for actor in ACTORS}
    | {"anonymous": 401, "superuser": 204},
    "GET /api/roles/": ANY_USER,
    "POST /api/roles/": ROLE_ADMIN | {"superuser": 201},
    "GET /api/roles/{name}/": ANY_USER,
    "PATCH /api/roles/{name}/": ROLE_ADMIN,
    "DELETE /api/roles/{name}/": ROLE_ADMIN | {"superuser": 204},
    "GET /api/roles/{name}/prompt/": ANY_USER,
    "POST /api/roles/{name}/check/": ANY_USER,  # decides a call; runs and writes nothing
    "GET /api/roles/export/": ANY_USER,
    "POST /api/roles/import/": ROLE_ADMIN,
    "GET /api/roles/test/": ANY_USER,  # runs examples, writes nothing
    "GET /api/role-drafts/": ANY_USER,
    "GET /api/role-drafts/{id}/": ANY_USER,
    # Another admin's draft: roles.publish_roledraft, which only the superuser holds here.
    "POST /api/role-drafts/{id}/publish/": ROLE_ADMIN,
    "POST /api/role-drafts/{id}/reject/": ROLE_ADMIN,
    "POST /api/roles/test/": ANY_USER,
    "POST /api/roles/{name}/replay/": ROLE_ADMIN,  # shows audit rows; writes nothing
    "GET /api/tools/": ANY_USER,
    "GET /api/transition-rules/": ANY_USER,
    "GET /api/prompt-packs/": ANY_USER,
    "GET /api/prompt-packs/{name}/": ANY_USER,
    # Model endpoints are admin data: view_modelendpoint / change_modelendpoint.
    "GET /api/model-endpoints/": ROLE_ADMIN,
    "PUT /api/model-endpoints/{name}/": ROLE_ADMIN,
    "POST /api/model-endpoints/{name}/check/": ROLE_ADMIN,
    # MCP servers, their definitions and roles' argument limits: admin data, model perms.
    "GET /api/mcp-servers/": ROLE_ADMIN,
    "POST /api/mcp-servers/": ROLE_ADMIN | {"superuser": 201},
    "GET /api/mcp-servers/{slug}/": ROLE_ADMIN,
    "PATCH /api/mcp-servers/{slug}/": ROLE_ADMIN,
    "DELETE /api/mcp-servers/{slug}/": ROLE_ADMIN | {"superuser": 204},
    # Nothing listens at the server's URL: who may refresh it hears that.
    "POST /api/mcp-servers/{slug}/refresh/": ROLE_ADMIN,
    "GET /api/mcp-servers/{slug}/tools/": ROLE_ADMIN,
    "POST /api/mcp-servers/{slug}/tools/{tool}/approve/": ROLE_ADMIN,
    "GET /api/roles/{name}/argument-limits/": ROLE_ADMIN,
    "POST /api/roles/{name}/argument-limits/": ROLE_ADMIN | {"superuser": 201},
    "PATCH /api/roles/{name}/argument-limits/{tool}/": ROLE_ADMIN,
    "DELETE /api/roles/{name}/argument-limits/{tool}/": ROLE_ADMIN | {"superuser": 204},
    "GET /api/repositories/": ANY_USER,
    "GET /api/sessions/": ANY_USER,
    "POST /api/sessions/": ANY_USER | {actor: 201 for actor in ACTORS[1:]},
    "GET /api/sessions/{id}/": SESSION_READ,
    "PATCH /api/sessions/{id}/": SESSION_WRITE,
    # The world's session has a queued job: who may act is told it is busy (ACODE-SES-008).
    "POST /api/sessions/{id}/archive/": SESSION_WRITE | dict.fromkeys(MAY_ACT, 409),
    "POST /api/sessions/{id}/restore/": SESSION_WRITE,
    "POST /api/sessions/{id}/transition/": SESSION_WRITE,
    "GET /api/sessions/{id}/transitions/": SESSION_READ,
    "GET /api/sessions/{id}/history/": SESSION_READ,
    "GET /api/sessions/{id}/plan/": SESSION_READ,
    "PUT /api/sessions/{id}/plan/": SESSION_WRITE,
    "PATCH /api/sessions/{id}/plan/steps/{number}/": SESSION_WRITE,
    "GET /api/sessions/{id}/changes/": SESSION_READ,
    "POST /api/sessions/{id}/changes/": SESSION_CREATE,
    "POST /api/sessions/{id}/changes/approve/": SESSION_WRITE,
    "GET /api/sessions/{id}/stats/": SESSION_READ,
    "GET /api/sessions/{id}/tools/": SESSION_READ,
    "GET /api/sessions/{id}/context/": SESSION_READ,
    "POST /api/sessions/{id}/search/": SESSION_READ,  # a read with a body (issue 38)
    "GET /api/sessions/{id}/patch/": SESSION_READ,
    "GET /api/sessions/{id}/commits/": SESSION_READ,
    "GET /api/sessions/{id}/jobs/": SESSION_READ,
    "POST /api/sessions/{id}/jobs/": SESSION_CREATE,
    "GET /api/jobs/{id}/": SESSION_READ,
    "GET /api/jobs/{id}/events/": SESSION_READ,
    "POST /api/jobs/{id}/cancel/": SESSION_WRITE,
    # The world's job is queued, not stopped at a limit: who may act is told so (JOB-013).
    "POST /api/jobs/{id}/resume/": SESSION_WRITE | dict.fromkeys(MAY_ACT, 409),
    # A tool call a rule put to a person: who may act on the session answers it.
    "GET /api/sessions/{id}/consents/": SESSION_READ,
    "POST /api/sessions/{id}/consents/{consent_id}/": SESSION_WRITE,
    # Decision memory: who sees the session sees it; revoking needs
    # sessions_app.revoke_rememberedanswer (only the superuser here) and sight of it.
    "GET /api/sessions/{id}/remembered-answers/": SESSION_READ,
    "POST /api/remembered-answers/{answer_id}/revoke/": SESSION_READ
    | {"owner": 403, "viewer": 403, "actor": 403},
    "POST /api/sessions/{id}/runs/": SESSION_CREATE,
    "GET /api/runs/": ANY_USER,
    "GET /api/runs/{id}/": SESSION_READ,
    "GET /api/runs/{id}/events/": SESSION_READ,
    # The run waits for approval, not an answer: who may act gets the state conflict.
    "POST /api/runs/{id}/answer/": SESSION_WRITE | {"owner": 409, "actor": 409, "superuser": 409},
    "POST /api/runs/{id}/approve/": RUN_DECIDE,
    "POST /api/runs/{id}/reject/": RUN_DECIDE,
    "POST /api/runs/{id}/cancel/": SESSION_WRITE,
    "GET /api/workflows/": ANY_USER,
    "GET /api/workflows/{slug}/": ANY_USER,
    "GET /api/workflows/export/": STAFF,
    "POST /api/workflows/import/": STAFF,
    "GET /api/risk-signals/": ANY_USER,
    "GET /api/usage/": ANY_USER,
    "GET /api/usage/totals/": ANY_USER,
    "GET /api/usage/quality/": ANY_USER,
    "GET /api/audit/": ANY_USER,
    "GET /api/audit/export/": ANY_USER,
    # Re-hashing the whole log: view_auditevent (permissions.can_verify_audit).
    # Backlogs (issue 40): a project is seen and acted on like a session; the owner's
    # project has the proposed task "matrix-task", which unblocking refuses (not blocked).
    "GET /api/backlog/projects/": ANY_USER,
    "POST /api/backlog/projects/": ANY_USER | {actor: 201 for actor in ACTORS[1:]},
    "GET /api/backlog/projects/{slug}/": SESSION_READ,
    "POST /api/backlog/projects/{slug}/import/": SESSION_CREATE,
    # Planning starts the Product Manager's job: 202 for who may act on the board.
    "POST /api/backlog/projects/{slug}/plan/": SESSION_WRITE
    | {"owner": 202, "actor": 202, "superuser": 202},
    "GET /api/backlog/projects/{slug}/tasks/": SESSION_READ,
    "GET /api/backlog/projects/{slug}/tasks/{key}/": SESSION_READ,
    "POST /api/backlog/projects/{slug}/tasks/{key}/accept/": SESSION_WRITE,
    "POST /api/backlog/projects/{slug}/tasks/{key}/reject/": SESSION_WRITE,
    "POST /api/backlog/projects/{slug}/tasks/{key}/priority/": SESSION_WRITE,
    "POST /api/backlog/projects/{slug}/tasks/{key}/unblock/": SESSION_WRITE
    | {"owner": 409, "actor": 409, "superuser": 409},
    "GET /api/audit/verify/": {actor: 403 for actor in ACTORS}
    | {"anonymous": 401, "auditor": 200, "superuser": 200},
    # Outside agents' hooks take a hook token only: a login is refused (issue 43).
    "POST /api/hooks/{agent}/": {actor: 403 for actor in ACTORS} | {"anonymous": 401},
    "GET /api/hook-tokens/": ANY_USER,
    "POST /api/hook-tokens/": ANY_USER | {actor: 201 for actor in ACTORS[1:]},
    # Each user revokes only their own: the owner's token is nobody else's.
    "DELETE /api/hook-tokens/{token_id}/": {actor: 404 for actor in ACTORS}
    | {"anonymous": 401, "owner": 204},
}

# What each request sends: a body the owner's request succeeds with, or query parameters.
BODIES: dict[str, Any] = {
    "POST /api/auth/token/": {"username": "owner", "password": "pw-owner-123"},
    "POST /api/roles/": {"slug": "matrix", "name": "Matrix"},
    "PATCH /api/roles/{name}/": {"description": "Changed by the matrix"},
    "POST /api/roles/{name}/check/": {"tool": "write_file", "arguments": {"path": "a.txt"}},
    "POST /api/mcp-servers/": {"slug": "matrix-mcp", "command": ["matrix-mcp"]},
    "PATCH /api/mcp-servers/{slug}/": {"description": "Changed by the matrix"},
    "PUT /api/model-endpoints/{name}/": {
        "kind": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
    },
    "POST /api/roles/{name}/argument-limits/": {"tool": "other", "schema": {"maxProperties": 1}},
    "PATCH /api/roles/{name}/argument-limits/{tool}/": {"schema": {"maxProperties": 2}},
    "PATCH /api/sessions/{id}/": {"title": "Renamed"},
    "POST /api/sessions/": {"title": "Another"},
    "POST /api/sessions/{id}/transition/": {"to_role": "default", "reason": "Matrix"},
    "PUT /api/sessions/{id}/plan/": {"steps": ["Only step"]},
    "PATCH /api/sessions/{id}/plan/steps/{number}/": {"status": "done"},
    "POST /api/sessions/{id}/changes/": {"path": "b.py", "kind": "created", "diff": "+b"},
    "POST /api/sessions/{id}/jobs/": {"request": "Explain the code"},
    "POST /api/sessions/{id}/search/": {"query": "where are retries handled?"},
    "POST /api/sessions/{id}/runs/": {"request": "Explain the code"},
    "POST /api/runs/{id}/answer/": {"answer": "Yes"},
    "POST /api/runs/{id}/reject/": {"reason": "Not now"},
    "POST /api/sessions/{id}/consents/{consent_id}/": {"allow": False, "note": "Not now"},
    "POST /api/hooks/{agent}/": {"hook_event_name": "SessionStart", "session_id": "m", "cwd": "/"},
    "POST /api/hook-tokens/": {"name": "laptop"},
    "POST /api/agents/": {
        "name": "Matrix agent",
        "template": "planner",
        "goals": ["Read"],
        "checklist": ["Cite files"],
    },
    "POST /api/backlog/projects/": {"slug": "matrix-new", "title": "New board"},
    "POST /api/backlog/projects/{slug}/tasks/{key}/priority/": {"priority": "high"},
    "POST /api/backlog/projects/{slug}/tasks/{key}/reject/": {"reason": "Not in this release"},
    "POST /api/backlog/projects/{slug}/plan/": {"spec": "A shop that sells hats."},
}
QUERIES: dict[str, dict[str, str]] = {"GET /api/audit/export/": {"format": "jsonl"}}


def schema_operations() -> set[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {f"{method.upper()} {path}" for path, ops in schema["paths"].items() for method in ops}


def test_every_operation_has_a_row() -> None:
    assert schema_operations() == set(EXPECTED)


@pytest.fixture(scope="module")
def built_world(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, Any], Path]]:
    """The world, built once per test process and module (about 0.6 s; there are 722
    cells) in a transaction that is rolled back at the end. Each cell runs in a savepoint
    inside it (the ``django_db`` marker's own transaction nests) and gets its files back
    from a copy made right after the build, so a cell sees the world as built whatever
    the cells before it wrote."""
    root = tmp_path_factory.mktemp("matrix")
    roots = {name: str(root / "live" / folder) for name, folder in STATE_ROOTS.items()}
    fast = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    unblocked = django_db_blocker.unblock()
    with unblocked, override_settings(PASSWORD_HASHERS=fast, **roots), transaction.atomic():
        world = world_build(get_user_model())
        (root / "live").mkdir(exist_ok=True)
        shutil.copytree(root / "live", root / "built")
        yield world, root
        transaction.set_rollback(True)


@pytest.fixture
def world(built_world: tuple[dict[str, Any], Path], db: None) -> dict[str, Any]:
    """The built world, its rows read afresh (no cell sees another's objects in memory)."""
    built, root = built_world
    shutil.rmtree(root / "live")
    shutil.copytree(root / "built", root / "live")
    cache.delete("throttle_login_127.0.0.1")  # the login row logs in seven times
    fresh = {key: _reread(value) for key, value in built.items()}
    return fresh | {"users": {name: _reread(user) for name, user in built["users"].items()}}


def _reread(value: Any) -> Any:
    return type(value).objects.get(pk=value.pk) if isinstance(value, Model) else value


def world_build(django_user_model: Any) -> dict[str, Any]:
    users = {
        name: django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        for name in ACTORS[1:-1]
    }
    users["superuser"] = django_user_model.objects.create_superuser("root", password="pw-r-123")
    for name, codename in PERMISSIONS.items():
        users[name].user_permissions.add(Permission.objects.get(codename=codename))
    owner = users["owner"]
    session = session_create(owner=owner, title=SECRET, task=f"{SECRET} task")
    plan_set(session=session, steps=["Step one"], user=owner)
    change_record(session=session, path="a.py", kind="created", diff="+a", user=owner)
    session_transition(session=session, to_role="reviewer", reason="Review it", user=owner)
    job = job_create(session=session, request=f"{SECRET} job", user=owner)
    # A run that waits at its gate at once: a template of the approval stage alone.
    gate = WorkflowTemplate.objects.create(slug="matrix-gate", name="Matrix gate", risk_tier="high")
    WorkflowStage.objects.create(template=gate, position=0, purpose="approval")
    runs_session = session_create(owner=owner, title="Runs", task="Runs")
    run = run_start(
        session=runs_session, request=f"{SECRET} run", user=owner, template="matrix-gate"
    )
    for user in users.values():
        Token.objects.create(user=user)
    make_role("scratch")
    custom_agent_create(user=users["superuser"], name="Matrix standing agent", template="planner",
                        goals=["Read"], checklist=["Cite files"], slug="matrix-standing")  # fmt: skip
    # A protected role with an open draft another user (not an actor here) made.
    make_role("guarded", protected=True)
    drafter = django_user_model.objects.create_user("drafter", password="pw-drafter-123")
    draft = role_write(
        data={"description": "Drafted"}, user=drafter, create=False, slug="guarded"
    ).draft
    # An endpoint nothing listens on: the check answers at once that it is unreachable.
    ModelEndpoint.objects.create(name="scratch", base_url="http://127.0.0.1:9/v1", model="m")
    mcp = McpServer.objects.create(
        slug="matrix-gate",
        transport="http",
        url="http://127.0.0.1:9/mcp",
        call_timeout_seconds=2,
        allow_private_network=True,  # a local server an admin allowed on purpose
    )
    mcp_definitions_record(server=mcp, definitions=[{"name": "issues"}])
    McpArgumentLimit.objects.create(
        role=Role.objects.get(slug="scratch"), tool="issues", schema={"maxProperties": 3}
    )
    digest = RunApproval.objects.get(run=run, status="pending").digest
    consent = ToolConsent.objects.create(
        session=session, role_slug="reviewer", tool="execute_command", target="rm x",
        rule="command_rules[0]: rm", expires_at=timezone.now() + timedelta(minutes=15),
    )  # fmt: skip
    hook_token, _ = hook_token_create(user=owner, label="matrix")
    answer = RememberedAnswer.objects.create(
        session=session, role_slug="reviewer", key="0" * 64, tool="execute_command",
        target="rm x", allowed=False, answered_by=owner, answered_by_name="owner",
    )  # fmt: skip
    board = project_create(owner=owner, slug="matrix-gate", title=f"{SECRET} board")
    backlog_import(project=board, actor="pm", proposed_by="pm",
                   document={"tasks": [{"key": "matrix-task", "title": f"{SECRET} task"}]})  # fmt: skip
    return {
        "hook_token": hook_token,
        "answer": answer,
        "consent": consent,
        "users": users,
        "session": session,
        "job": job,
        "run": run,
        "digest": digest,
        "draft": draft,
    }


def url_of(operation: str, world: dict[str, Any]) -> str:
    path = operation.split(" ", 1)[1]
    own_id = world["job"].pk if path.startswith("/api/jobs/") else world["session"].pk
    if path.startswith("/api/runs/"):
        own_id = world["run"].pk
    if path.startswith("/api/role-drafts/"):
        own_id = world["draft"].pk
    return (
        path.replace("{id}", str(own_id))
        .replace("{number}", "1")
        .replace("{consent_id}", str(world["consent"].pk))
        .replace("{token_id}", str(world["hook_token"].pk))
        .replace("{agent}", "claude-code")
        .replace("{answer_id}", str(world["answer"].pk))
        .replace("{slug}", "matrix-gate")
        .replace("{role}", "matrix-standing")
        .replace("{tool}", "issues")
        .replace("{key}", "matrix-task")
        .replace("{name}", "scratch" if "prompt-packs" not in path else "acode-standard")
    )


def client_for(actor: str, world: dict[str, Any]) -> APIClient:
    client = APIClient()
    if actor != "anonymous":
        client.force_authenticate(world["users"][actor], token=None)
    return client


def call(operation: str, actor: str, world: dict[str, Any]) -> Any:
    method, _ = operation.split(" ", 1)
    client, url = client_for(actor, world), url_of(operation, world)
    if operation in (
        "POST /api/roles/import/",
        "POST /api/workflows/import/",
        "POST /api/roles/test/",
    ):
        export = url.replace("/import/", "/export/").replace("/test/", "/export/")
        yaml_text = client_for("superuser", world).get(export).content
        return client.generic("POST", url, yaml_text, content_type="application/yaml")
    if operation == "POST /api/backlog/projects/{slug}/import/":
        yaml_text = "tasks:\n  - key: imported\n    title: Imported\n"
        return client.generic("POST", url, yaml_text, content_type="application/yaml")
    if operation == "POST /api/mcp-servers/{slug}/tools/{tool}/approve/":  # what was read
        live = McpToolDefinition.objects.get(server__slug="matrix-gate", name="issues").live_hash
        return client.generic(method, url, json.dumps({"hash": live}), "application/json")
    if operation == "POST /api/runs/{id}/approve/":
        body = json.dumps({"digest": world["digest"]})
        return client.generic(method, url, body, "application/json")
    if operation == "POST /api/sessions/{id}/changes/approve/":  # what is pending now
        body = json.dumps({"summary": "Looks right", "digest": pending_digest(world["session"])})
        return client.generic(method, url, body, "application/json")
    if method == "GET":
        return client.get(url, QUERIES.get(operation, {}))
    return client.generic(method, url, json.dumps(BODIES.get(operation, {})), "application/json")


def state(world: dict[str, Any]) -> tuple[Any, ...]:
    """Everything a refused write must leave as it was."""
    session = AgentSession.objects.get(pk=world["session"].pk)
    counted = (AgentSession, RoleTransition, AuditEvent, Job, PendingChange, IdempotencyRecord)
    return (
        *(model.objects.count() for model in counted),
        Role.objects.count(),
        RoleVersion.objects.count(),
        Token.objects.count(),
        Job.objects.filter(cancel_requested=True).count(),
        tuple(Run.objects.order_by("created_at").values_list("status", "cancel_requested")),
        tuple(RunApproval.objects.order_by("id").values_list("status", flat=True)),
        tuple(WorkflowTemplate.objects.order_by("slug").values_list("slug", "updated_at")),
        tuple(BacklogTask.objects.order_by("id").values_list("key", "status", "priority")),
        session.title,
        session.plan,
        session.current_role_id,
        session.status,
    )


def body_text(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return str(response.content.decode())


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("operation", sorted(EXPECTED))
def test_matrix(operation: str, actor: str, world: dict[str, Any]) -> None:
    before = state(world)
    response = call(operation, actor, world)
    text = body_text(response)
    assert response.status_code == EXPECTED[operation][actor], text[:500]
    if not operation.startswith("GET") and response.status_code in (401, 403, 404):
        assert state(world) == before, "a refused write changed something"
    if actor in ("other", "anonymous"):
        secrets = (SECRET, str(world["session"].pk), str(world["job"].pk), str(world["run"].pk))
        for secret in secrets:
            assert secret not in text, f"{actor} saw {secret!r}"
