"""Schemathesis, every check, against the server ``make run`` starts: the published schema
is what the API does, for an ordinary user and for a superuser.

The ``st`` command line runs all its phases (examples, coverage, fuzzing, stateful) with
``--checks all`` and a fixed seed, as an independent run would, against daphne serving
this test's database (``acode.devserver.web_command``). What a schema cannot say is in
``schemathesis_hooks.py`` (logging in again after a generated logout, a fresh
``Idempotency-Key`` per generated request, the test's own ids for generated UUIDs) and in
the configuration below: 413 and 431 are refusals too (schemathesis' default list of
refusal statuses lacks them).

The server gets a Redis of its own: the jobs and runs the fuzzer starts are queued there,
where no worker of another test can pick them up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from acode.devserver import web_command
from acode.embedded import embedded_redis, free_port, stop_process, wait_for_port
from roles.models import McpServer
from roles.services import role_write
from roles.services.mcp import mcp_definitions_record, mcp_server_save
from sessions_app.models import WorkflowStage, WorkflowTemplate
from sessions_app.services import jobs
from sessions_app.services.jobs import job_create
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.api.test_authorization_matrix import EXPECTED
from tests.conftest import ROOT, shared_database_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# A fixed seed, so CI runs the same cases; a longer campaign: ACODE_FUZZ_SEED=7
# ACODE_FUZZ_EXAMPLES=100 pytest tests/api/test_fuzz.py.
SEED = int(os.environ.get("ACODE_FUZZ_SEED", "20261126"))
EXAMPLES = int(os.environ.get("ACODE_FUZZ_EXAMPLES", "20"))  # per operation and phase
PATHS = os.environ.get("ACODE_FUZZ_PATHS", "")
PASSWORD = "pw-fuzz-12345"
CONFIG = """
request-timeout = 60

[checks.negative_data_rejection]
expected-statuses = [
  "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "431",
  "5xx",
]

"""

# The operations only an administrator may call (the authorization matrix refuses its
# owner, other, viewer and actor with 403, and checks each refusal): the superuser's
# campaign fuzzes them, the ordinary user's leaves them out (about a fifth of its requests
# were those refusals).
SUPERUSER_ONLY = sorted(
    operation
    for operation, row in EXPECTED.items()
    if row["superuser"] < 300 and all(row[a] == 403 for a in ("owner", "other", "viewer", "actor"))
)


def _world_of(user: Any) -> dict[str, str]:
    """A session with a queued job (no worker takes it) and a run waiting at its gate."""
    session = session_create(owner=user, title="Fuzzed", task="Be fuzzed")
    job = job_create(session=session, request="Explain the code", user=user)
    runs_session = session_create(owner=user, title="Fuzzed runs", task="Be fuzzed")
    run = run_start(session=runs_session, request="Be approved", user=user, template="fuzz-gate")
    return {"session": str(session.pk), "job": str(job.pk), "run": str(run.pk)}


@pytest.fixture
def world(
    transactional_db: None, django_user_model: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, dict[str, str]]:
    monkeypatch.setattr(jobs, "_enqueue", lambda job, queue: None)  # this process queues nothing
    gate = WorkflowTemplate.objects.create(slug="fuzz-gate", name="Fuzz gate", risk_tier="high")
    WorkflowStage.objects.create(template=gate, position=0, purpose="approval")
    people = {
        "user": django_user_model.objects.create_user("fuzzer", "f@example.com", PASSWORD),
        "superuser": django_user_model.objects.create_superuser("boss", "b@example.com", PASSWORD),
    }
    shared = _named_world(people["superuser"])
    return {
        kind: {
            "username": user.get_username(),
            "token": Token.objects.create(user=user).key,
            **_world_of(user),
            **shared,
        }
        for kind, user in people.items()
    }


def _named_world(admin: Any) -> dict[str, str]:
    """An MCP server listing one tool (pending approval), and a protected role with an open
    draft by the superuser (who therefore cannot publish it)."""
    server = mcp_server_save(server=McpServer(slug="fuzzsrv", command=["fuzz-mcp"]), actor="t")
    listed = {"name": "issues", "description": "List issues", "input_schema": {"type": "object"}}
    mcp_definitions_record(server=server, definitions=[listed])
    guarded = {"slug": "guarded", "name": "Guarded", "permissions": ["read_files"]}
    role_write(data={**guarded, "protected": True}, create=True, actor="t")
    draft = role_write(data={"description": "A draft"}, create=False, slug="guarded", user=admin)
    assert draft.draft is not None
    return {"mcp_server": "fuzzsrv", "mcp_tool": "issues", "draft": str(draft.draft.pk)}


@pytest.fixture
def server(world: dict[str, Any], tmp_path: Path) -> Iterator[str]:
    """daphne as ``make run`` starts it, on this test's database and a Redis of its own."""
    port = free_port()
    with embedded_redis() as redis_url, (tmp_path / "daphne.log").open("wb") as log:
        env = {
            **os.environ,
            "DATABASE_URL": shared_database_url(),
            "REDIS_URL": redis_url,
            "DJANGO_SETTINGS_MODULE": "acode.settings",
            "ACODE_DEBUG": "0",
            # The fuzzer logs in again after each generated logout, and sends generated
            # logins: the login limit is not what this test is about.
            "ACODE_LOGIN_RATE": "100000/min",
            "ACODE_LOGIN_IP_RATE": "100000/min",
        }
        for name in ("DJANGO_ALLOW_ASYNC_UNSAFE", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
            env.pop(name, None)
        proc = subprocess.Popen(
            web_command("127.0.0.1", port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_for_port(port, timeout=60)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop_process(proc)


@pytest.mark.parametrize("who", ["user", "superuser"])
def test_schemathesis_finds_nothing(
    who: str, server: str, world: dict[str, dict[str, str]], tmp_path: Path
) -> None:
    mine = world[who]
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [
        str(Path(sys.executable).parent / "st"),
        *("--config-file", str(config)),
        *("run", f"{server}/api/schema/"),
        *("--checks", "all", "--seed", str(SEED), "--max-examples", str(EXAMPLES)),
        *("--workers", "1", "--no-shrink", "--output-truncate", "false"),
        # ACODE_FUZZ_PATHS=backlog: only the operations whose path matches (a quick look).
        *(("--include-path-regex", PATHS) if PATHS else ()),
        *(arg for name in SUPERUSER_ONLY if who == "user" for arg in ("--exclude-name", name)),
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks",
        "ACODE_FUZZ_URL": server,
        "ACODE_FUZZ_TOKEN": mine["token"],
        "ACODE_FUZZ_USERNAME": mine["username"],
        "ACODE_FUZZ_PASSWORD": PASSWORD,
        "ACODE_FUZZ_SESSION": mine["session"],
        "ACODE_FUZZ_JOB": mine["job"],
        "ACODE_FUZZ_RUN": mine["run"],
        "ACODE_FUZZ_MCP_SERVER": mine["mcp_server"],
        "ACODE_FUZZ_MCP_TOOL": mine["mcp_tool"],
        "ACODE_FUZZ_DRAFT": mine["draft"],
        "PYTHONPATH": str(ROOT),
        "NO_COLOR": "1",
    }
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    report = result.stdout + result.stderr
    (tmp_path / "schemathesis.txt").write_text(report)
    assert result.returncode == 0, report[-20_000:]
    assert "No issues found" in report or "passed" in report, report[-5_000:]
