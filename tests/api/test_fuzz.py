"""Schemathesis against the live server: the published schema is what the API does.

Bounded so it stays a test, not a campaign: a fixed seed and a few positive and negative
examples per operation, no shrinking. Every request goes through the real HTTP stack (the
live server), so Django's own 404s and the middleware's limits are checked too. Checks:
``not_a_server_error``, ``status_code_conformance``, ``response_schema_conformance`` and
``content_type_conformance``; every failure is collected and reported at the end.

Role writes are fuzzed too, against the test's throw-away database (``transactional_db``).
"""

from __future__ import annotations

import uuid
from typing import Any

import hypothesis
import hypothesis.errors
import pytest
import schemathesis
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sessions_app.models import WorkflowStage, WorkflowTemplate
from sessions_app.services import jobs
from sessions_app.services.jobs import job_create
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SEED = 20261125
EXAMPLES_PER_MODE = 25
TOKEN = "f" * 40
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    response_schema_conformance,
    content_type_conformance,
]
LEFT_OUT: set[str] = set()


@pytest.fixture
def fuzz_world(transactional_db: Any, django_user_model: Any, monkeypatch: Any) -> dict[str, Any]:
    """A superuser who owns a session with a queued job (no worker picks it up), and a
    second session whose run waits at its approval gate."""
    monkeypatch.setattr(jobs, "_enqueue", lambda job, queue: None)
    user = django_user_model.objects.create_superuser("fuzz", "fuzz@example.com", "pw-fuzz-1")
    Token.objects.create(user=user, key=TOKEN)
    session = session_create(owner=user, title="Fuzzed", task="Be fuzzed")
    job = job_create(session=session, request="Explain the code", user=user)
    gate = WorkflowTemplate.objects.create(slug="fuzz-gate", name="Fuzz gate", risk_tier="high")
    WorkflowStage.objects.create(template=gate, position=0, purpose="approval")
    runs_session = session_create(owner=user, title="Fuzzed runs", task="Be fuzzed")
    run = run_start(session=runs_session, request="Be approved", user=user, template="fuzz-gate")
    return {"user": user, "session": session, "job": job, "run": run}


def _use_real_ids(case: Any, world: dict[str, Any]) -> None:
    """Generated UUIDs almost never name a row: point valid ones at the fixtures (malformed
    ids from negative generation stay, and must get a JSON 404)."""
    given = (case.path_parameters or {}).get("id")
    try:
        uuid.UUID(str(given))
    except ValueError:
        return
    target = world["job"] if case.path.startswith("/api/jobs/") else world["session"]
    if case.path.startswith("/api/runs/"):
        target = world["run"]
    case.path_parameters["id"] = str(target.pk)


def _fuzz(operation: Any, mode: GenerationMode, world: dict[str, Any]) -> set[str]:
    failures: set[str] = set()

    @hypothesis.seed(SEED)
    @hypothesis.settings(
        max_examples=EXAMPLES_PER_MODE,
        database=None,
        deadline=None,
        phases=[hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        # A generated DELETE /api/auth/token/ revokes the token: put it back every time.
        Token.objects.get_or_create(user=world["user"], defaults={"key": TOKEN})
        _use_real_ids(case, world)
        try:
            case.call_and_validate(headers={"Authorization": f"Token {TOKEN}"}, checks=CHECKS)
        except (AssertionError, FailureGroup) as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            failures.add(f"{operation.label} ({mode}): {first_line}\n{exc}")

    try:
        run()
    except hypothesis.errors.Unsatisfiable:
        assert mode is GenerationMode.NEGATIVE  # nothing in the operation can be made invalid
    return failures


def test_api_keeps_its_published_schema(live_server: Any, fuzz_world: dict[str, Any]) -> None:
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")
    operations = [result.ok() for result in schema.get_all_operations()]
    fuzzed = [op for op in operations if op.definition.raw["operationId"] not in LEFT_OUT]
    assert len(fuzzed) >= 35
    failures: set[str] = set()
    for operation in fuzzed:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            failures |= _fuzz(operation, mode, fuzz_world)
    assert not failures, "\n\n".join(sorted(failures))
