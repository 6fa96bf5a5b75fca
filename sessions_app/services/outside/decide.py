"""An outside call decided by the one decision (``roles.decision.decide``), call by call.

The outside agent runs what is allowed on its own machine, outside acode's sandbox: the
host facts say so (no sandbox is required of acode here), so a command is decided by the
role's command rules alone. What acode's own tools would redact, the outside agent reads
raw: a file secret by its name is refused unless the role may read secrets. The network
has no tool of its own: a call that needs it needs the role's ``network`` permission.

Every call of a line must be allowed for the line to be; the first refusal names its rule;
a call a rule puts to a person makes the whole line "ask".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from roles.commands.workspace import WorkspaceFacts
from roles.decision import HostFacts, PolicyRole, decide
from sessions_app.containment import is_secret_file
from sessions_app.services.outside.mapping import Call, Mapped

logger = logging.getLogger(__name__)
# The outside agent runs its commands itself: acode's sandbox is not asked for.
OUTSIDE_HOST = HostFacts(sandbox_required=False)
SECRETS = "read_secrets"
DENIED = "ACODE-ROL-003"


@dataclass(frozen=True)
class OutsideDecision:
    """allow | ask | deny, the rule that decided, a reason in words, and each call's."""

    outcome: str
    rule: str
    reason: str
    code: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)


def _one(role: PolicyRole, call: Call, workspace: WorkspaceFacts) -> dict[str, Any]:
    if (
        call.reads_path
        and is_secret_file(call.reads_path)
        and SECRETS not in role.access.permissions
    ):
        return {
            "tool": call.tool or "read", "target": call.reads_path, "outcome": "deny",
            "rule": "secrets", "code": DENIED,
            "reason": f"Role {role.name} may not read {call.reads_path}: it holds secrets.",
        }  # fmt: skip
    if not call.tool:
        if not call.permission:
            return {"tool": "read", "target": call.reads_path, "outcome": "allow", "rule": ""}
        rule = f"permission: {call.permission}"
        if call.permission in role.access.permissions:
            return {"tool": call.permission, "target": "", "outcome": "allow", "rule": rule}
        reason = f"Role {role.name} has no {call.permission} access."
        return {"tool": call.permission, "target": "", "outcome": "deny", "rule": rule,
                "reason": reason, "code": DENIED}  # fmt: skip
    decision = decide(role, call.tool, call.arguments, host=OUTSIDE_HOST, workspace=workspace)
    return {"tool": call.tool, "target": decision.target, "outcome": decision.outcome,
            "rule": decision.rule, "reason": decision.reason, "code": decision.code}  # fmt: skip


def _checked(role: PolicyRole, call: Call, workspace: WorkspaceFacts) -> dict[str, Any]:
    """``_one``, or a refusal that says the call could not be checked (never a 5xx)."""
    try:
        return _one(role, call, workspace)
    except Exception as exc:  # as the executor's check: a check that cannot decide refuses
        logger.exception("checking outside call %s failed", call.tool)
        reason = f"The call could not be checked ({type(exc).__name__}); it did not run."
        return {"tool": call.tool, "target": "", "outcome": "deny", "rule": "check_failed",
                "reason": reason, "code": "ACODE-TOL-002"}  # fmt: skip


def outside_decide(role: PolicyRole, mapped: Mapped, workspace: WorkspaceFacts) -> OutsideDecision:
    """The decision on an outside call: each of its acode calls by the one decision."""
    if not mapped.calls:
        return OutsideDecision("deny", mapped.rule, mapped.reason, DENIED)
    calls = [_checked(role, call, workspace) for call in mapped.calls]
    for call in calls:
        if call["outcome"] == "deny":
            return OutsideDecision("deny", call["rule"], call["reason"], call["code"], calls)
    for call in calls:
        if call["outcome"] == "ask":
            return OutsideDecision("ask", call["rule"], call["reason"], call["code"], calls)
    rules = sorted({call["rule"] for call in calls if call["rule"]})
    reason = f"Role {role.name} allows this call ({'; '.join(rules)})."
    return OutsideDecision("allow", "; ".join(rules), reason, "", calls)
