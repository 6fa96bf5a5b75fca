"""The audit export streams: rows shaped as the audit API shapes them, sent a chunk at a
time under ASGI too, read through a database cursor that PostgreSQL does not copy aside
first."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import AsyncClient, Client
from django.test.utils import CaptureQueriesContext

from sessions_app.apis import audit as audit_api
from sessions_app.apis.serializers import AuditEventOutput
from sessions_app.models import AuditEvent
from sessions_app.services.audit import audit_record
from tests.conftest import RUN_ON_POSTGRES

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(django_user_model: Any) -> User:
    user = django_user_model.objects.create_superuser("lead", "lead@example.com", "pw-lead-123")
    call_command(
        "acode_generate_data",
        sessions=4,
        transitions=10,
        audit_events=150,
        job_events=20,
        owners=1,
        stdout=io.StringIO(),
    )
    audit_record(
        event_type="RoleDataChanged",
        actor="admin",
        target="prompt ünïcode ✓",
        details={"name": "naïve — ✓", "nested": {"n": [1, 2.5, None, True]}},
    )
    return user


def as_api_shapes() -> list[dict[str, Any]]:
    """Every event as the audit API shows it, through JSON as a client reads it."""
    rows = AuditEvent.objects.order_by("id")
    return [json.loads(json.dumps(AuditEventOutput(e).data, default=str)) for e in rows]


def test_export_rows_are_the_audit_api_rows(lead: User) -> None:
    client = Client()
    client.force_login(lead)
    response = client.get("/api/audit/export/", {"format": "jsonl"})
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert [json.loads(line) for line in lines] == as_api_shapes()
    response = client.get("/api/audit/export/", {"format": "csv"})
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert table[0] == list(AuditEventOutput.Meta.fields)
    expected = as_api_shapes()
    assert len(table) == len(expected) + 1
    last = dict(zip(table[0], table[-1], strict=True))
    assert json.loads(last["details"]) == expected[-1]["details"]
    assert last["created_at"] == expected[-1]["created_at"]


def test_export_comes_in_chunks_the_first_one_small(
    lead: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_api, "EXPORT_FIRST_CHUNK_ROWS", 10)
    monkeypatch.setattr(audit_api, "EXPORT_CHUNK_ROWS", 50)
    client = Client()
    client.force_login(lead)
    response = client.get("/api/audit/export/", {"format": "jsonl"})
    chunks = [chunk.decode().count("\n") for chunk in response.streaming_content]
    total = AuditEvent.objects.count()
    assert chunks[:2] == [10, 50] and sum(chunks) == total and max(chunks) == 50


def test_export_streams_under_asgi_with_the_same_rows(lead: User) -> None:
    client = AsyncClient()

    async def export() -> tuple[bool, bytes]:
        await client.aforce_login(lead)
        response = await client.get("/api/audit/export/", {"format": "jsonl"})
        body = b"".join([chunk async for chunk in response.streaming_content])
        return response.is_async, body

    # The async handler runs the view and the chunks on this (the test's) thread.
    is_async, body = async_to_sync(export)()
    assert is_async  # a plain iterator would be read to the end before sending anything
    assert [json.loads(line) for line in body.decode().splitlines()] == as_api_shapes()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason=f"PostgreSQL cursors; {RUN_ON_POSTGRES}"
)
@pytest.mark.django_db(transaction=True)  # autocommit, as in production
def test_export_cursor_is_not_copied_aside_before_the_first_row(lead: User) -> None:
    # Outside a transaction Django declares the cursor WITH HOLD, and PostgreSQL then
    # materialises the whole result before the first row.
    client = Client()
    client.force_login(lead)
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/api/audit/export/", {"format": "jsonl"})
        b"".join(response.streaming_content)
    declares = [q["sql"] for q in captured if q["sql"].startswith("DECLARE")]
    assert declares and all("WITH HOLD" not in sql for sql in declares)
