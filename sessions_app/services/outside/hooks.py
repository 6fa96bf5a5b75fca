"""One hook event of an outside agent: its session, the decision, the audit, the answer.

``hook_event`` is what every hook endpoint calls (Claude Code's HTTP hooks, the
``acode hook codex`` shim, the generic route). A tool call (``PreToolUse``,
``PermissionRequest``, any event with a ``tool_name``) is mapped to acode's calls
(``mapping``) and decided by the one decision (``decide``), in the session's current role;
the decision is in the session's audit chain before the answer leaves (``ToolDecision``,
``ToolDenied`` or ``ToolConsent``). ``PostToolUse``/``PostToolUseFailure`` record the
outcome (``RoleAction``); every other event, known or not, is recorded as it came
(``HookEvent``: its name, its fields' names, a prompt redacted). Each event is told to the
open pages after commit (``outside.event``).

A call a rule asks about is answered "ask" where the agent can ask its own user (Claude
Code); any other agent's hook is held until a person allowed to decide answers on the
dashboard, and denied (said so) when ``ACODE_HOOK_ASK_SECONDS`` run out.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from acode.errors import AcodeError
from roles.commands.workspace import KnownWorkspace, LiveWorkspace, WorkspaceFacts
from sessions_app.containment import redact_text
from sessions_app.models import (
    AgentKind,
    AgentSession,
    AuditEventType,
    ConsentStatus,
    HookToken,
    SessionStatus,
)
from sessions_app.services.audit import audit_record, current_role_of, publish_session_event
from sessions_app.services.consents import consent_refusal, tool_consent_ask, tool_consent_await
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.outside.decide import OutsideDecision, outside_decide
from sessions_app.services.outside.mapping import Project, outside_calls
from sessions_app.services.outside.sessions import outside_session

MALFORMED = "ACODE-HOK-001"
DECIDED_EVENTS = {"PreToolUse", "PermissionRequest"}
OUTCOME_EVENTS = {"PostToolUse", "PostToolUseFailure"}
ASKS_ITS_USER = {AgentKind.CLAUDE_CODE}
# The open pages hear of a session's hook events at most this late, once for a burst: an
# agent's calls come back to back, and a push per call costs its next answer time.
PUSH_WITHIN = 0.25


@dataclass(frozen=True)
class HookAnswer:
    """What acode answers an event: a decision (``outcome`` allow | ask | deny) for a tool
    call, "" for an event that only is recorded."""

    event: str
    session: str
    outcome: str = ""
    rule: str = ""
    reason: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)


def _field(event: dict[str, Any], name: str, limit: int, *, required: bool = True) -> str:
    value = event.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > limit:
        raise AcodeError(
            MALFORMED, f"The hook event's {name} must be a string of at most {limit} characters.",
            {"field": name},
        )  # fmt: skip
    return value


def hook_event(
    *, token: HookToken, agent: str, event: Any, machine: str = "", repository: str = ""
) -> HookAnswer:
    """Record ``event`` in its session (created by the first one) and answer it."""
    if not isinstance(event, dict):
        raise AcodeError(MALFORMED, "A hook event is a JSON object.", {"field": "event"})
    name = _field(event, "hook_event_name", 64)
    agent_session_id = _field(event, "session_id", 200)
    cwd = _field(event, "cwd", 1000)
    if not os.path.isabs(cwd) or "\x00" in cwd:
        raise AcodeError(
            MALFORMED, "The hook event's cwd must be an absolute path.", {"field": "cwd"}
        )
    with transaction.atomic(), outside_session(
        token=token, agent=agent, agent_session_id=agent_session_id, cwd=os.path.normpath(cwd),
        machine=machine[:200], repository=repository[:500],
    ) as session:  # fmt: skip
        if session.status == SessionStatus.ARCHIVED:
            return _archived(name, event, session, token)
        transaction.on_commit(
            lambda: publish_session_event(session.pk, EventKind.OUTSIDE_EVENT, within=PUSH_WITHIN)
        )
        if name in OUTCOME_EVENTS:
            _outcome(session, name, event, token)
            return HookAnswer(name, str(session.pk))
        if name not in DECIDED_EVENTS and "tool_name" not in event:
            _recorded(session, name, event, token)
            return HookAnswer(name, str(session.pk))
        decision, audited = _decided(session, name, event, token)
        if decision.outcome != "ask" or agent in ASKS_ITS_USER:
            return _answer(name, session, decision)
    return _answer(name, session, _held(session, event, decision, audited))


def _archived(
    name: str, event: dict[str, Any], session: AgentSession, token: HookToken
) -> HookAnswer:
    """An archived session is read-only: a call is denied until a person restores it (the
    same refusal as every other change, ACODE-SES-007), and the denial is in its audit
    chain like any (an agent that keeps trying shows); other events are not recorded."""
    if name in OUTCOME_EVENTS or (name not in DECIDED_EVENTS and "tool_name" not in event):
        return HookAnswer(name, str(session.pk))
    reason = (
        f"acode: session {session.pk} is archived, so it is read-only. A person restores it "
        f"(acode session restore {session.pk}, or Restore on its page) to go on (ACODE-SES-007)."
    )
    audit_record(
        event_type=AuditEventType.TOOL_DENIED, actor=session.owner.get_username(),
        session=session, role=current_role_of(session).slug,
        target=redact_text(str(event.get("tool_name", "")))[:1000], result="ACODE-SES-007",
        details={**_details(event, token), "phase": "decision", "rule": "session archived",
                 "reason": reason},
    )  # fmt: skip
    return HookAnswer(name, str(session.pk), "deny", "session archived", reason)


def _answer(name: str, session: AgentSession, decision: OutsideDecision) -> HookAnswer:
    reason = decision.reason
    if decision.rule and decision.outcome != "allow":
        reason = f"acode: {reason} (rule: {decision.rule})"
    return HookAnswer(
        name, str(session.pk), decision.outcome, decision.rule, reason, decision.calls
    )


def _project(session: AgentSession, event: dict[str, Any]) -> tuple[Project, WorkspaceFacts]:
    root = session.workspace
    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else root
    local = Path(root).is_dir()
    facts: WorkspaceFacts = LiveWorkspace(Path(root)) if local else KnownWorkspace()
    project = Project(
        root=root, cwd=os.path.normpath(str(cwd)),
        exists=lambda rel: local and os.path.lexists(os.path.join(root, rel)),
        link_on_path=facts.link_on_path,
    )  # fmt: skip
    return project, facts


def _summary(value: Any, limit: int = 2000, *, redact: bool = True) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = text[:limit] + ("…" if len(text) > limit else "")
    return redact_text(text) if redact else text


def _details(event: dict[str, Any], token: HookToken) -> dict[str, Any]:
    tool_use_id = event.get("tool_use_id")
    return {
        "hook_event": str(event.get("hook_event_name", ""))[:64],
        "agent_tool": str(event.get("tool_name", ""))[:200],
        "tool_use_id": tool_use_id[:200] if isinstance(tool_use_id, str) else "",
        "token": token.prefix,
    }


def outside_decision(session: AgentSession, event: dict[str, Any]) -> OutsideDecision:
    """The decision on the event's tool call, in the session's current role."""
    project, facts = _project(session, event)
    mapped = outside_calls(event.get("tool_name"), event.get("tool_input", {}), project)
    return outside_decide(current_role_of(session), mapped, facts)


def _decided(
    session: AgentSession, name: str, event: dict[str, Any], token: HookToken
) -> tuple[OutsideDecision, int]:
    decision = outside_decision(session, event)
    kinds = {
        "allow": AuditEventType.TOOL_DECISION,
        "deny": AuditEventType.TOOL_DENIED,
        "ask": AuditEventType.TOOL_CONSENT,
    }
    role = current_role_of(session)
    said = _redacted({"arguments": _summary(event.get("tool_input"), redact=False),
                      "reason": decision.reason, "calls": decision.calls[:50],
                      "target": _target(event, decision)[:1000]})  # fmt: skip
    details = {
        **_details(event, token), "phase": "decision" if decision.outcome != "ask" else "asked",
        "arguments": said["arguments"], "rule": decision.rule, "reason": said["reason"],
        "calls": said["calls"], "role_version": role.version, "role_hash": role.content_hash,
    }  # fmt: skip
    row = audit_record(
        event_type=kinds[decision.outcome], actor=session.owner.get_username(), session=session,
        role=role.slug, target=said["target"],
        result="allowed" if decision.outcome == "allow" else decision.code or decision.outcome,
        details=details,
    )  # fmt: skip
    return decision, int(row.pk)


def _redacted(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` redacted in one pass (redaction reads the server's secrets each time): as
    JSON text, read back; field by field should a mask ever break the JSON."""
    try:
        redacted = json.loads(redact_text(json.dumps(value, default=str, ensure_ascii=False)))
        if isinstance(redacted, dict):
            return redacted
    except json.JSONDecodeError:
        pass
    return {key: redact_text(item if isinstance(item, str) else json.dumps(item, default=str))
            for key, item in value.items()}  # fmt: skip


def _target(event: dict[str, Any], decision: OutsideDecision) -> str:
    targets = [str(call.get("target", "")) for call in decision.calls if call.get("target")]
    return f"{str(event.get('tool_name', ''))[:200]} {'; '.join(targets)}".strip()


def _outcome(session: AgentSession, name: str, event: dict[str, Any], token: HookToken) -> None:
    failed = name == "PostToolUseFailure"
    response = event.get("tool_response", event.get("error", ""))
    audit_record(
        event_type=AuditEventType.ROLE_ACTION, actor=session.owner.get_username(),
        session=session, role=current_role_of(session).slug,
        target=redact_text(str(event.get("tool_name", ""))[:200]),
        result="error" if failed else "ok",
        details={**_details(event, token), "phase": "outcome",
                 "status": "error" if failed else "ok", "output": _summary(response)},
    )  # fmt: skip


def _recorded(session: AgentSession, name: str, event: dict[str, Any], token: HookToken) -> None:
    fields = sorted(str(key)[:64] for key in list(event)[:100])
    details: dict[str, Any] = {**_details(event, token), "fields": fields}
    for key in ("prompt", "source", "reason", "message"):
        if key in event:
            details[key] = _summary(event[key])
    audit_record(
        event_type=AuditEventType.HOOK_EVENT, actor=session.owner.get_username(), session=session,
        role=current_role_of(session).slug, target=name[:64], result="recorded", details=details,
    )  # fmt: skip


def _held(
    session: AgentSession, event: dict[str, Any], decision: OutsideDecision, asked: int
) -> OutsideDecision:
    """A call put to a person on the dashboard: allowed if they allow it in time (and the
    role, read again, still lets it run), else denied with who refused or that nobody
    answered."""
    consent = tool_consent_ask(
        session=session, job=None, role=current_role_of(session).slug,
        tool=str(event.get("tool_name", ""))[:200], target=redact_text(_target(event, decision)),
        rule=decision.rule, reason=redact_text(decision.reason),
        arguments={"input": _summary(event.get("tool_input"))}, asked_audit_id=asked,
        timeout_seconds=settings.ACODE_HOOK_ASK_SECONDS,
    )  # fmt: skip
    publish_session_event(session.pk, EventKind.OUTSIDE_EVENT)  # the page shows the question
    answered = tool_consent_await(consent)
    if answered.status != ConsentStatus.ALLOWED:
        code, reason = consent_refusal(answered)
        return OutsideDecision("deny", decision.rule, reason, code, decision.calls)
    fresh = AgentSession.objects.select_related("owner").get(pk=session.pk)
    again = outside_decision(fresh, event)
    if again.outcome == "deny":
        return again
    return OutsideDecision("allow", decision.rule,
                           f"{answered.answered_by_name} allowed this call ({decision.rule}).",
                           "", decision.calls)  # fmt: skip
