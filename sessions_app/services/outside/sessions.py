"""An outside agent's session is an acode session: created by its first event.

The agent's session id, the token's user, the machine, the working directory (the project
root: the session's workspace, which acode does not manage) and the repository are kept
with it (``OutsideSession``); the session starts in the role the hook token names, else
the default role, and from then on changes role only as any session does (the dashboard,
``POST /api/sessions/{id}/transition/``): each event reads the session's current role, so
a change is in force on the agent's next call.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from acode.prebuilt import Prebuilt
from roles.registry import registry, stamp_column
from sessions_app.models import AgentKind, AgentSession, HookToken, OutsideSession
from sessions_app.services.audit import publish_session_event
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.locks import lock_session, lock_session_found
from sessions_app.services.outside.tokens import (
    hook_token_fresh,
    hook_token_live_column,
    hook_token_refused,
)
from sessions_app.services.sessions import history_start

# (user, agent kind, agent's session id) -> the acode session's id, for this process: an
# outside session's ids never change, so later events lock the session by its primary key
# alone instead of joining ``OutsideSession`` (an agent posts every tool call).
_known_ids: dict[tuple[int, str, str], uuid.UUID] = {}
KNOWN_IDS_KEPT = 10_000  # then it starts again (each step is atomic: threads share it)


def _remember(key: tuple[int, str, str], session_id: uuid.UUID) -> None:
    if len(_known_ids) >= KNOWN_IDS_KEPT:
        _known_ids.clear()
    _known_ids[key] = session_id


def _locked(rows: QuerySet[AgentSession], token_id: Any, key_hash: str) -> QuerySet[AgentSession]:
    """``rows`` locked as read, with the role registry's stamp and whether the hook token is
    still live: an event's one read."""
    stamped = rows.order_by().annotate(
        registry_stamp=stamp_column(),
        token_live=hook_token_live_column(token_id=token_id, key_hash=key_hash),
    )
    return stamped.select_for_update(of=("self",))


# Built once per process (``acode.prebuilt``): on every tool call, building this statement
# cost the ORM more than running it.
_STAND_INS = {"token_id": uuid.uuid4(), "key_hash": f"stand-in {uuid.uuid4().hex}"}
_BY_ID: Prebuilt[AgentSession] = Prebuilt(
    lambda pk, token_id, key_hash: _locked(AgentSession.objects.filter(pk=pk), token_id, key_hash),
    pk=uuid.uuid4(), **_STAND_INS,
)  # fmt: skip
_BY_AGENT: Prebuilt[AgentSession] = Prebuilt(
    lambda user_id, kind, agent_session_id, token_id, key_hash: _locked(
        AgentSession.objects.filter(outside__owner_id=user_id, outside__agent=kind,
                                    outside__agent_session_id=agent_session_id),
        token_id, key_hash,
    ),
    user_id=-917_263_551, kind=f"stand-in {uuid.uuid4().hex}",
    agent_session_id=f"stand-in {uuid.uuid4().hex}", **_STAND_INS,
)  # fmt: skip


def agent_kind(agent: str) -> str:
    """The stored kind of an agent named in a hook's URL."""
    return agent if agent in AgentKind.values else AgentKind.OTHER


@contextmanager
def outside_session(
    *, token: HookToken, agent: str, agent_session_id: str, cwd: str, machine: str, repository: str
) -> Iterator[AgentSession]:
    """The acode session of an outside agent's session (created by its first event), found
    and locked in one query and held for the enclosing transaction (``locks``): the chain
    head its event is audited on and the role it is decided in are read from that row, and
    the role registry is brought up to date from the stamp the same query reads."""
    kind = agent_kind(agent)
    key = (token.user_id, kind, agent_session_id)
    known = _known_ids.get(key)
    live = {"token_id": token.pk, "key_hash": token.key_hash}
    if known is not None:  # by its primary key, no join: the ids never change
        rows = _BY_ID.rows(pk=known, **live)
    else:
        rows = _BY_AGENT.rows(
            user_id=token.user_id, kind=kind, agent_session_id=agent_session_id, **live
        )
    with lock_session_found(rows) as found:
        if found is not None:
            if not getattr(found, "token_live", False):  # revoked since this process saw it
                raise hook_token_refused(token)
            _remember(key, found.pk)
            # The role registry as of this moment, read in the same query (the hook view
            # leaves the request's own read to it: ``syncs_registry_itself``).
            registry.sync(stamp=getattr(found, "registry_stamp", None) or "")
            found.owner = token.user  # the token's user owns it: no second read
            yield found
            return
    if known is not None:  # the session is gone (deleted): find it again, or create it
        _known_ids.pop(key, None)
        with outside_session(
            token=token, agent=agent, agent_session_id=agent_session_id, cwd=cwd,
            machine=machine, repository=repository,
        ) as session:  # fmt: skip
            yield session
        return
    token = hook_token_fresh(token)  # a first event: the token as it is now
    registry.sync()
    try:
        with transaction.atomic():
            created = _create(token, kind, agent_session_id, cwd, machine, repository).pk
    except IntegrityError:  # a second first event won the race: its session is the one
        created = OutsideSession.objects.get(
            owner_id=token.user_id, agent=kind, agent_session_id=agent_session_id
        ).session_id
    _remember(key, created)
    with lock_session(created) as session:
        session.owner = token.user
        yield session


def _create(
    token: HookToken, kind: str, agent_session_id: str, cwd: str, machine: str, repository: str
) -> AgentSession:
    role = registry.by_id(token.role_id) if token.role_id else registry.default()
    now = timezone.now()
    label = AgentKind(kind).label
    place = posixpath.basename(cwd.rstrip("/")) or cwd
    session = AgentSession.objects.create(
        id=uuid.uuid4(),
        title=f"{label} in {place}"[:200] + (f" on {machine}"[:60] if machine else ""),
        task=f"{label} session {agent_session_id}",
        owner=token.user,
        workspace=cwd,
        workspace_managed=False,
        current_role_id=role.id,
        role_version_id=role.version_id,
        role_since=now,
        transition_count=1,
        last_reason="Initial state",
    )
    OutsideSession.objects.create(
        session=session, owner=token.user, agent=kind, agent_session_id=agent_session_id,
        machine=machine, cwd=cwd, repository=repository, token=token,
    )  # fmt: skip
    history_start(session, token.user, "")
    transaction.on_commit(lambda: publish_session_event(session.id, EventKind.SESSION_CREATED))
    return session
