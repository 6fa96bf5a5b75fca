"""The one place tools run. Every call is checked again here, whatever the model was shown.

``tool_check`` is the one tool decision (``roles.decision.decide``, a pure function that a
role's examples are checked with too) fed with the live facts it depends on: this host's
sandbox and the session's workspace. Each decision names the rule that made it, and
carries the arguments normalised once: what the implementation runs with.

``tool_execute`` audits before anything runs and again after, whatever happens:

- refused: one ``ToolDenied`` row (``result`` the ACODE code, ``details.rule`` the rule);
- put to a person (a rule's ``"outcome": "ask"``): a ``ToolConsent`` row (phase "asked"),
  the wait for an answer (``sessions_app.services.consents``), then as allowed below, or
  the refusal the model is told (ACODE-TOL-007 refused, -008 no answer in time);
- allowed: a ``ToolDecision`` row (``result`` "allowed", the rule, the role version, the
  normalised arguments), then the outcome: ``RoleAction`` (ran; ``result`` its summary, or
  ACODE-TOL-002 with the exception type when it failed) or ``ToolDenied`` (refused while
  running, e.g. a path that turned out to be a link). A command's writes the role may not
  make are discarded with its layer and audited as one more ``ToolDenied`` row (``phase``
  "command_writes");
- a sub-agent's call (a delegated job, issue 41) its role refuses or puts to a person: a
  ``ToolDenied`` row (phase "escalating"), then one ``ToolDecision`` row per ancestor
  job's role deciding it (phase "escalated"): the first that allows it runs it as that
  role, the first whose rule asks puts it to a person as that role; else as above.

The decision row (allowed or refused) also keeps a ``replay`` entry: what the decision read
besides the role (the exact arguments unless too large or holding something redacted, the
host facts, the workspace link answers; ``roles.decision.recording``), so a draft of the
role can decide the same call again (``roles.decision.replay``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acode.errors import AcodeError
from audit.services import safe_text
from roles.commands.workspace import LiveWorkspace, WorkspaceFacts
from roles.decision import (
    BAD_ARGUMENTS,
    DENIED,
    LAYER_UNAVAILABLE,
    SANDBOX_UNAVAILABLE,
    Decision,
    HostFacts,
    HostSource,
    decide,
    deny,
    sandbox_problem,
)
from roles.decision.recording import RecordingHost, RecordingWorkspace, replay_record
from roles.registry import RoleDef, registry
from sessions_app.agent.mcp.tool import run_mcp_tool
from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolContext, ToolResult
from sessions_app.containment import (
    McpFailure,
    Refused,
    RuleRefused,
    SandboxUnavailable,
    is_secret_file,
    model_data,
    model_text,
    redact_text,
    sandbox_available,
    sandbox_required,
)
from sessions_app.models import AgentSession, AuditEventType, ConsentStatus, Job, JobEventKind
from sessions_app.services.audit import audit_record
from sessions_app.services.consents import consent_refusal, tool_consent_ask, tool_consent_await
from sessions_app.services.delegation import MAX_ESCALATION_HOPS
from sessions_app.services.jobs import job_event

logger = logging.getLogger(__name__)

__all__ = [
    "BAD_ARGUMENTS",
    "DENIED",
    "LAYER_UNAVAILABLE",
    "SANDBOX_UNAVAILABLE",
    "Decision",
    "ToolOutcome",
    "tool_check",
    "tool_execute",
]

TOOL_FAILED = "ACODE-TOL-002"
TOOL_DECISION = AuditEventType.TOOL_DECISION
NETWORK_PERMISSION = "network"  # the decision's (roles.decision) too
SECRETS_PERMISSION = "read_secrets"
MAX_AUDITED_WRITES = 100


def live_host() -> HostFacts:
    """This host's sandbox now (the probe runs once per process, when a command is first
    decided)."""
    status = sandbox_available()
    return HostFacts(sandbox_required(), status.available, status.reason, status.overlay,
                     status.overlay_reason)  # fmt: skip


def tool_check(
    role: RoleDef,
    tool: str,
    arguments: Any,
    workspace: Path,
    *,
    host: HostSource = live_host,
    facts: WorkspaceFacts | None = None,
) -> Decision:
    """Decide a call on this host in ``workspace``: the one decision (``roles.decision``)
    with the live facts it depends on (``host``/``facts``: the same, seen through a
    recorder)."""
    facts = LiveWorkspace(workspace) if facts is None else facts
    return decide(role, tool, arguments, host=host, workspace=facts)


@dataclass(frozen=True)
class ToolOutcome:
    """What the model is told about its call, and how it ended.

    ``output`` and ``detail`` (outside text an error quotes: a server's error message, an
    exception about a file) reach the model as untrusted data; ``reason`` is acode's."""

    status: str  # ok | denied | error
    output: str
    code: str = ""
    reason: str = ""
    target: str = ""
    detail: str = ""
    source: str = ""  # what the outside text came from (the tool)
    untrusted: bool = True  # the output is outside data (False: acode's own words)
    waited: float = 0.0  # seconds the call waited for a person's consent (not the job's)
    summary: str = ""  # how the tool ended, in its words: a command's "exit 5", "timed out"
    suggestion: str = ""  # a denial's suggestion: the role that has the tool, or who to ask

    def for_model(self) -> str:
        """The one channel's text for the model (``sessions_app.containment.channel``)."""
        if self.status == "ok":
            if not self.untrusted:
                return model_text(self.output)
            return model_data(self.output, source=self.source or "a tool")
        if self.reason.startswith("[ERROR] "):  # the spec's denial, its own first line
            text = model_text(f"{self.reason}\n({self.code})")
        else:
            text = model_text(f"ERROR {self.code}: {self.reason}")
        if self.detail:
            text += "\n" + model_data(self.detail, source=self.source or "a tool")
        return text


def _audited_arguments(arguments: Any) -> Any:
    """The arguments with what is written to a file as the view would show that file:
    nothing of a file secret by its name (its whole content is the secret), the rest with
    its secrets masked as in that file."""
    if isinstance(arguments, dict) and isinstance(arguments.get("content"), str):
        path = str(arguments.get("path", ""))
        content = arguments["content"]
        shown = "[REDACTED: written to a secret file]" if is_secret_file(path) else content
        return {**arguments, "content": redact_text(shown, path=path)}
    return arguments


def _arguments_summary(arguments: Any) -> Any:
    arguments = _audited_arguments(arguments)
    text = json.dumps(arguments, default=str)
    if len(text) > 2000:
        text = text[:2000] + "…"
    return redact_text(text)


def _clean(text: str) -> str:
    """Text safe for the model, the job events and the database: redacted, no NUL/surrogate."""
    return safe_text(redact_text(text))


@dataclass
class _CallAudit:
    """The audit rows of one call: every row carries the same call details."""

    session: AgentSession
    role: str
    actor: str
    target: str
    details: dict[str, Any]

    def row(self, event_type: str, result: str, *, target: str | None = None, **extra: Any) -> int:
        # Redacted here, once for every row of a call: a secret in a command's argv reaches
        # the normalised arguments, the target and a refusal's reason as well as the summary.
        event = audit_record(
            event_type=event_type, actor=self.actor, session=self.session, role=self.role,
            target=redact_text(self.target if target is None else target), result=result,
            details=_redacted({**self.details, **extra}),
        )  # fmt: skip
        return int(event.pk)


def _redacted(value: Any) -> Any:
    """``value`` with every string in it redacted (``redact_text``)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(item) for item in value]
    return value


def tool_execute(
    *,
    session: AgentSession,
    role: RoleDef,
    tool: str,
    arguments: Any,
    actor: str,
    context: ToolContext,
    job: Job | None = None,
) -> ToolOutcome:
    """Check, audit the decision, run, audit the outcome. Denied calls never execute."""
    decision, replay = _decide(role, tool, arguments, Path(session.workspace))
    details: dict[str, Any] = {
        "tool": tool,
        "arguments": _arguments_summary(arguments),
        "normalised": decision.normalised,
        "rule": decision.rule,
        "role_version": role.version,
        "role_hash": role.content_hash,
    }
    if job is not None:
        details["job"] = str(job.pk)
    declared = role.access.declaration(tool)
    if declared is not None and declared.kind == "mcp":  # which approved definition decided
        details["definition_hash"] = declared.pinned_hash
    audit = _CallAudit(session, role.slug, actor, f"{tool} {decision.target}".strip(), details)
    refused = decision.ask or (not decision.allowed and decision.code == DENIED)
    if job is not None and job.parent_id is not None and refused:  # not a malformed call
        escalated = _escalate(audit, decision, job, arguments, context, replay)
        if escalated is not None:
            return escalated
    if decision.ask and decision.declaration is not None:
        return _ask_first(audit, decision, arguments, context, replay, job)
    if not decision.allowed or decision.declaration is None:
        audit.row(AuditEventType.TOOL_DENIED, decision.code, phase="decision",
                  reason=decision.reason, code=decision.code, replay=replay)  # fmt: skip
        return ToolOutcome("denied", "", decision.code, _clean(decision.reason),
                           _clean(decision.target), suggestion=decision.suggestion)  # fmt: skip
    details["decision"] = audit.row(TOOL_DECISION, "allowed", phase="decision", replay=replay)
    details["decision_rule"] = details.pop("rule")
    return _run(audit, decision, _call_context(context, role))


def _ask_first(
    audit: _CallAudit, decision: Decision, arguments: Any, context: ToolContext,
    replay: dict[str, Any], job: Job | None,
) -> ToolOutcome:  # fmt: skip
    """A call a rule puts to a person (``sessions_app.services.consents``): asked (the
    decision's audit row, with what a replay needs), then run as any allowed call if a
    person allows it in time (decided again first: the role may have changed meanwhile);
    otherwise the model is told who refused, or that nobody answered. The wait is not the
    job's time (``ToolOutcome.waited``)."""
    started = time.monotonic()
    asked = audit.row(AuditEventType.TOOL_CONSENT, decision.code, phase="asked",
                      reason=decision.reason, code=decision.code, replay=replay)  # fmt: skip
    consent = tool_consent_ask(
        session=audit.session, job=job, role=audit.role, tool=audit.details["tool"],
        target=redact_text(decision.target), rule=decision.rule,
        reason=redact_text(decision.reason), arguments=_redacted(decision.normalised),
        asked_audit_id=asked,
    )  # fmt: skip
    answered = tool_consent_await(consent, job=job)
    waited = time.monotonic() - started
    if answered.status == ConsentStatus.ALLOWED:
        audit.details.update(
            decision=asked, consent=str(consent.pk), consented_by=answered.answered_by_name
        )
        audit.details["decision_rule"] = audit.details.pop("rule")
        registry.sync()  # the role may have changed while the call waited: decide again
        role = registry.get(audit.role)
        again = tool_check(role, audit.details["tool"], arguments, Path(audit.session.workspace))
        if again.outcome == "deny" or again.declaration is None:
            return _refused_while_running(audit, again, again.code, again.rule, again.reason)
        return dataclasses.replace(_run(audit, again, _call_context(context, role)), waited=waited)
    code, reason = consent_refusal(answered)
    return ToolOutcome("denied", "", code, _clean(reason), _clean(decision.target), waited=waited)


def _escalate(
    audit: _CallAudit, decision: Decision, job: Job, arguments: Any, context: ToolContext,
    replay: dict[str, Any],
) -> ToolOutcome | None:  # fmt: skip
    """A sub-agent's call its role refuses (or puts to a person) goes up its chain first
    (issue 41): each ancestor job's role decides the same call, each hop audited; the first
    that allows it performs it (within its own permissions, never beyond them), the first
    whose rule asks puts it to a person (as that role: its answer is remembered so); None
    when none of them may, and the sub-agent's own decision stands. A depth guard and the
    jobs seen stop a loop."""
    audit.row(AuditEventType.TOOL_DENIED, decision.code, phase="escalating", replay=replay,
              reason=decision.reason, code=decision.code)  # fmt: skip
    tool, workspace, seen, current = (
        audit.details["tool"],
        Path(audit.session.workspace),
        {job.pk},
        job,
    )
    while current.parent_id is not None and current.parent_id not in seen:
        if len(seen) > MAX_ESCALATION_HOPS:
            break
        current = Job.objects.get(pk=current.parent_id)
        seen.add(current.pk)
        role = registry.by_id(current.role_id)
        again, replay = _decide(role, tool, arguments, workspace)
        up = _CallAudit(audit.session, role.slug, audit.actor, audit.target,
                        {**audit.details, "rule": again.rule, "escalated_from": audit.role,
                         "job": str(current.pk), "role_version": role.version})  # fmt: skip
        up.row(AuditEventType.TOOL_DECISION, again.outcome, phase="escalated", replay=replay)
        job_event(job, JobEventKind.NOTE, {"message": f"escalated {tool} to {role.slug}: "
                                                      f"{again.outcome}"})  # fmt: skip
        if again.ask and again.declaration is not None:
            return _ask_first(up, again, arguments, context, replay, current)
        if again.allowed and again.declaration is not None:
            up.details["decision_rule"] = up.details.pop("rule")
            return _run(up, again, _call_context(context, role))
    return None


def _decide(
    role: RoleDef, tool: str, arguments: Any, workspace: Path
) -> tuple[Decision, dict[str, Any]]:
    """``tool_check``, and what a replay needs of it (``roles.decision.recording``: the
    exact arguments, the host and workspace facts it read); a check that cannot decide
    refuses, and says so."""
    host, facts = RecordingHost(live_host), RecordingWorkspace(LiveWorkspace(workspace))
    try:
        decision = tool_check(role, tool, arguments, workspace, host=host, facts=facts)
    except Exception as exc:
        logger.exception("checking tool %s failed", tool)
        reason = f"The call could not be checked ({type(exc).__name__}: {exc}); it did not run."
        decision = deny(reason, "check_failed", TOOL_FAILED)
    audited = _audited_arguments(arguments)
    return decision, replay_record(
        arguments,
        host,
        facts,
        redact=lambda text: redact_text(text) if audited == arguments else "",
        tool=tool,
    )


def _call_context(context: ToolContext, role: RoleDef) -> ToolContext:
    """The session's context with the role's powers, from the role as it is now."""
    return dataclasses.replace(
        context,
        may_write=role.write_policy.may_write,
        network=NETWORK_PERMISSION in role.access.permissions,
        read_secrets=SECRETS_PERMISSION in role.access.permissions,
        write_policy=role.write_policy,
    )


def _run(audit: _CallAudit, decision: Decision, context: ToolContext) -> ToolOutcome:
    """Run an allowed call with its normalised arguments; audit how it ended."""
    assert decision.declaration is not None
    tool = decision.declaration.name
    try:
        if decision.declaration.kind == "mcp":
            result = run_mcp_tool(context, decision.declaration, decision.arguments)
        else:
            result = TOOL_IMPLEMENTATIONS[tool].run(context, decision.arguments)
    except McpFailure as exc:  # a server down, slow, unapproved or failing: a clean error
        error, detail = _clean(exc.message)[:2000], _clean(exc.detail)[:4000]
        audit.row(AuditEventType.ROLE_ACTION, exc.code, phase="outcome", status="error",
                  error=error, detail=detail)  # fmt: skip
        return ToolOutcome("error", "", exc.code, error, audit.target, detail, tool)
    except AcodeError as exc:  # a service refused what the tool asked (a stale approval)
        return _refused_while_running(audit, decision, exc.code, "service", exc.message)
    except SandboxUnavailable as exc:
        code, rule, reason = sandbox_problem(live_host(), writable=context.may_write)
        reason = reason or f"Commands run only inside a sandbox, and none can start here: {exc}."
        return _refused_while_running(audit, decision, code or SANDBOX_UNAVAILABLE,
                                      rule or "sandbox", reason)  # fmt: skip
    except Refused as exc:
        return _refused_while_running(audit, decision, DENIED, _refusal_rule(exc), exc.reason)
    except Exception as exc:  # every failure is an audited, clean tool error
        logger.exception("tool %s failed", tool)
        error = _clean(f"{type(exc).__name__}: {exc}")[:2000]
        audit.row(AuditEventType.ROLE_ACTION, TOOL_FAILED, phase="outcome", status="error",
                  error_type=type(exc).__name__, error=error)  # fmt: skip
        # The exception's words may quote outside text (a file's bytes, a name in the
        # workspace): they reach the model as data.
        return ToolOutcome("error", "", TOOL_FAILED, f"{tool} failed ({type(exc).__name__})",
                           audit.target, error, tool)  # fmt: skip
    _audit_write_denials(audit, result)
    audit.row(AuditEventType.ROLE_ACTION, result.summary, target=result.target, phase="outcome",
              status="ok", tool_name=tool, **result.details)  # fmt: skip
    return ToolOutcome("ok", _clean(result.output), target=_clean(result.target), source=tool,
                       untrusted=result.untrusted, summary=result.summary)  # fmt: skip


def _refusal_rule(exc: Refused) -> str:
    if isinstance(exc, RuleRefused):
        return exc.rule
    return "path"


def _refused_while_running(
    audit: _CallAudit, decision: Decision, code: str, rule: str, reason: str
) -> ToolOutcome:
    audit.row(AuditEventType.TOOL_DENIED, code, phase="outcome", status="denied", rule=rule,
              reason=_clean(reason), code=code)  # fmt: skip
    return ToolOutcome("denied", "", code, _clean(reason), _clean(decision.target))


def _audit_write_denials(audit: _CallAudit, result: ToolResult) -> None:
    """One ``ToolDenied`` row for everything a command changed that the role may not."""
    denied = result.write_denials
    if not denied:
        return
    rules = sorted({d["rule"] for d in denied})
    codes = {d.get("code", DENIED) for d in denied}
    code = codes.pop() if len(codes) == 1 else DENIED  # a layer over budget: ACODE-TOL-005
    audit.row(
        AuditEventType.TOOL_DENIED, code, phase="command_writes", rule=rules[0], rules=rules,
        count=len(denied), discarded=denied[:MAX_AUDITED_WRITES],
        reason=f"{len(denied)} change(s) the role may not make were discarded",
    )  # fmt: skip
