"""A role transition in one SQL statement, for callers that state the role they expect.

``session_transition`` locks the session and the audit chain head, decides, writes four
rows and commits: three round trips to the database and a transaction around them. When
the caller says which role it expects the session to be in (``expected_role``), and it is
the session's owner, everything the decision needs is known before the row is read
except the row itself, so on PostgreSQL the whole change is one statement:

- lock the session row, only if it is still in the expected role, still owned by the
  caller and (for a rule that needs a plan) has one;
- lock the chain head, only if the session row was locked (session first, then head:
  the order every writer takes them in);
- insert the transition and the audit event, hashed in the database from the event's
  canonical text (``sessions_app.audit.canonical_parts``) and the head it locked, move
  the head, and update the session, returning its new row.

Outside a transaction that statement commits on its own, in the same round trip.
Concurrent writers are handled by PostgreSQL's row locks under READ COMMITTED: a writer
that waits for the session lock sees the winner's row afterwards, and a changed role or
a lost plan makes the guard fail. Whenever the statement changes nothing (a guard failed,
the head does not exist yet, another precondition is involved), ``session_transition``
goes the general way, which decides, refuses and audits as always; so this path only ever
takes transitions the general path would take, and writes the same rows.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import connections
from django.utils import timezone

from acode.db import instance_from_row, returning_columns, statement_cursor
from roles.models import Precondition
from roles.registry import RoleDef
from sessions_app.audit import canonical_parts, normalise_details
from sessions_app.models import AgentSession, AuditEvent, AuditEventType, AuditHead, RoleTransition

# The preconditions a guard on the session row itself can check. "changes_exist" reads
# another table, which a statement sees as of its start, not after a lock wait.
ROW_PRECONDITIONS = (Precondition.NONE, Precondition.PLAN_EXISTS)


def applicable(using: str, precondition: str) -> bool:
    return connections[using].vendor == "postgresql" and precondition in ROW_PRECONDITIONS


@functools.cache
def _statement(using: str, precondition: str) -> str:
    qn = connections[using].ops.quote_name

    def table(model: Any) -> str:
        return str(qn(model._meta.db_table))

    def col(model: Any, name: str) -> str:
        return str(qn(model._meta.get_field(name).column))

    def typed(model: Any, name: str, param: str) -> str:
        # Parameters in a SELECT list need their column's type (a NULL has none).
        return f"%({param})s::{model._meta.get_field(name).db_type(connections[using])}"

    session, head = table(AgentSession), table(AuditHead)
    s = {n: col(AgentSession, n) for n in ("id", "owner", "current_role", "transition_count")}
    plan = col(AgentSession, "plan")
    guard = ""
    if precondition == Precondition.PLAN_EXISTS:
        # Stricter than "the plan is not empty" in Python: a non-empty array. (Both tests
        # are safe on any JSON value: PostgreSQL may evaluate them in either order.)
        guard = f" AND jsonb_typeof({plan}) = 'array' AND {plan} <> '[]'::jsonb"

    def insert(model: Any, values: dict[str, str]) -> str:
        # Each column next to the expression that fills it: INSERT ... SELECT.
        columns = ", ".join(col(model, name) for name in values)
        return f"INSERT INTO {table(model)} ({columns})\n    SELECT {', '.join(values.values())}"

    insert_transition = insert(
        RoleTransition,
        {
            "session": "s.id",
            "seq": "s.count + 1",
            "from_role": typed(RoleTransition, "from_role", "from_role"),
            "to_role": typed(RoleTransition, "to_role", "current_role"),
            "role_version": typed(RoleTransition, "role_version", "role_version"),
            "reason": "%(last_reason)s::text",
            "actor": "%(actor)s::text",
            "user": typed(RoleTransition, "user", "user"),
            "request_id": "%(request_id)s::text",
            "created_at": typed(RoleTransition, "created_at", "role_since"),
        },
    )
    insert_event = insert(
        AuditEvent,
        {
            "seq": "e.seq",
            "event_type": "%(event_type)s::text",
            "session": "s.id",
            "role": "%(role)s::text",
            "actor": "%(actor)s::text",
            "target": "%(target)s::text",
            "result": "%(result)s::text",
            "details": typed(AuditEvent, "details", "details"),
            "created_at": typed(AuditEvent, "created_at", "event_created_at"),
            "prev_hash": "e.prev_hash",
            "hash": "e.hash",
        },
    )
    updates = ", ".join(
        f"{col(AgentSession, n)} = %({n})s"
        for n in ("current_role", "role_version", "role_since", "last_reason", "updated_at")
    )
    last_seq, last_hash = col(AuditHead, "last_seq"), col(AuditHead, "last_hash")
    head_id = col(AuditHead, "id")
    return f"""
WITH s AS (
    SELECT {s["id"]} AS id, {s["transition_count"]} AS count FROM {session}
    WHERE {s["id"]} = %(session)s AND {s["owner"]} = %(user)s
      AND {s["current_role"]} = %(from_role)s{guard}
    FOR UPDATE
), h AS (
    SELECT {last_seq} AS seq, {last_hash} AS hash FROM {head}
    WHERE {head_id} = 1 AND EXISTS (SELECT 1 FROM s)
    FOR UPDATE
), e AS (
    SELECT h.seq + 1 AS seq, h.hash AS prev_hash,
        encode(sha256(convert_to(
            %(before)s::text || h.hash || %(between)s::text || (h.seq + 1)::text
            || %(after)s::text, 'UTF8')), 'hex') AS hash
    FROM h
), t AS (
    {insert_transition}
    FROM s, e
), a AS (
    {insert_event}
    FROM s, e
), moved AS (
    UPDATE {head} SET {last_seq} = e.seq, {last_hash} = e.hash FROM e WHERE {head}.{head_id} = 1
)
UPDATE {session} SET {updates}, {s["transition_count"]} = s.count + 1
FROM s, e WHERE {session}.{s["id"]} = s.id
RETURNING {returning_columns(AgentSession, using)}
"""


def transition_in_one_statement(
    *,
    session_id: uuid.UUID | str,
    user: User,
    current: RoleDef,
    target: RoleDef,
    precondition: str,
    reason: str,
    actor: str,
    request_id: str,
    using: str = "default",
) -> tuple[AgentSession, RoleTransition] | None:
    """Move ``user``'s session from ``current`` to ``target`` if it is still in ``current``
    (and meets ``precondition``); the new session row and the transition, or None when
    nothing was written (the caller then takes the general path)."""
    connection = connections[using]
    try:
        # As the database stores it: the audit hash covers the id's canonical spelling.
        session_id = uuid.UUID(str(session_id))
    except ValueError:
        return None  # not an id at all: the general path says so
    now = timezone.now()
    reason = reason.strip()
    details = normalise_details(
        {
            "from_role": current.slug,
            "to_role": target.slug,
            "reason": reason,
            "role_version": target.version,
            "request_id": request_id,
        }
    )
    event = {
        "event_type": str(AuditEventType.ROLE_TRANSITION),
        "role": target.slug,
        "actor": actor[:150],
        "target": f"{current.slug}->{target.slug}"[:1000],
        "result": "ok",
    }
    before, between, after = canonical_parts(
        **event, session_id=session_id, details=details, created_at=now
    )
    field: Any = AgentSession._meta.get_field
    when = field("updated_at").get_db_prep_save(now, connection)
    params = {
        **event,
        "session": field("id").get_db_prep_value(session_id, connection),
        "user": user.pk,
        "from_role": current.id,
        "current_role": target.id,
        "role_version": target.version_id,
        "role_since": when,
        "updated_at": when,
        "event_created_at": when,
        "last_reason": reason,
        "request_id": request_id,
        "details": AuditEvent._meta.get_field("details").get_db_prep_save(details, connection),
        "before": before,
        "between": between,
        "after": after,
    }
    with statement_cursor(using) as cursor:
        cursor.execute(_statement(using, precondition), params)
        row = cursor.fetchone()
    if row is None:
        return None
    session = instance_from_row(AgentSession, row, using)
    session.owner = user
    transition = RoleTransition(
        session=session,
        seq=session.transition_count,
        from_role_id=current.id,
        to_role_id=target.id,
        role_version_id=target.version_id,
        reason=reason,
        actor=actor,
        user_id=user.pk,
        request_id=request_id,
        created_at=now,
    )
    return session, transition
