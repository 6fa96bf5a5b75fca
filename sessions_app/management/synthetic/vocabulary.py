"""What synthetic sessions are made of: words for titles and paths, and the roles, rules
and tools of the registry, read once."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

from roles.registry import RoleDef, RoleRegistry
from sessions_app.models import AuditEventType

Row = dict[str, Any]

VERBS = ["Add", "Fix", "Refactor", "Speed up", "Document", "Test", "Remove", "Port", "Harden"]
THINGS = [
    "rate limiting", "the login form", "CSV export", "the billing job", "search filters",
    "retry logic", "the cache layer", "webhooks", "pagination", "the settings page",
    "input validation", "the audit trail", "file uploads", "the scheduler", "error pages",
]  # fmt: skip
PATHS = [
    "src/app.py", "src/models.py", "src/views.py", "src/api/handlers.py", "src/util/text.py",
    "tests/test_app.py", "tests/test_api.py", "docs/usage.md", "README.md", "setup.cfg",
]  # fmt: skip
REASONS = {
    "planner": "Work out the steps first",
    "coder": "Plan approved; implement the next step",
    "reviewer": "Changes ready for review",
    "tester": "Run the test suite on the changes",
    "explorer": "Find where this lives in the code",
    "default": "Step finished; back to Default",
}
FILLER_EVENTS = [
    (AuditEventType.TOOL_DECISION, 32),
    (AuditEventType.ROLE_ACTION, 32),
    (AuditEventType.CHANGE_RECORDED, 10),
    (AuditEventType.TOOL_DENIED, 6),
    (AuditEventType.PLAN_UPDATED, 5),
    (AuditEventType.TRANSITION_DENIED, 3),
    (AuditEventType.SESSION_UPDATED, 2),
]


def split(total: int, parts: int, minimum: int, rng: random.Random) -> list[int]:
    """``total`` spread over ``parts``, each at least ``minimum``, unevenly (some sessions
    are much busier than others); the parts sum to ``total`` exactly."""
    extra = total - minimum * parts
    if extra < 0:
        raise ValueError(f"{total} cannot give {parts} parts at least {minimum} each")
    weights = [rng.lognormvariate(0, 0.75) for _ in range(parts)]
    factor = extra / sum(weights)
    out = [minimum + int(w * factor) for w in weights]
    for i in rng.sample(range(parts), total - sum(out)):  # what flooring left over (< parts)
        out[i] += 1
    return out


def new_uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


@dataclass(frozen=True)
class Vocabulary:
    """The roles, rules and tools the stories draw from (read once from the registry)."""

    roles: dict[str, RoleDef]
    rules: dict[str, list[str]]
    tools: dict[str, list[str]]
    withheld: dict[str, list[str]]
    default: str

    @classmethod
    def from_registry(cls, registry: RoleRegistry) -> Vocabulary:
        roles = {r.slug: r for r in registry.list_roles()}
        every = sorted(t.name for t in registry.tools())
        tools = {s: [t.name for t in registry.effective_tools(s)] for s in roles}
        return cls(
            roles=roles,
            rules={s: [r.to_slug for r in registry.rules_from(s)] for s in roles},
            tools={s: names or every for s, names in tools.items()},
            withheld={s: [t for t in every if t not in tools[s]] for s in roles},
            default=registry.default().slug,
        )

    def next_role(self, current: str, rng: random.Random) -> str:
        options = self.rules.get(current) or [s for s in self.roles if s != current]
        return rng.choice(options)

    def session_event(self, role: str, rng: random.Random) -> tuple[str, str, str, Row]:
        """(type, target, result, details) of one thing that happens in a role."""
        kind = rng.choices([k for k, _ in FILLER_EVENTS], [w for _, w in FILLER_EVENTS])[0]
        path = rng.choice(PATHS)
        spec = self.roles[role]
        if kind in (AuditEventType.TOOL_DECISION, AuditEventType.ROLE_ACTION):
            tool = rng.choice(self.tools[role])
            details = {
                "tool": tool, "arguments": f'{{"path": "{path}"}}', "normalised": path,
                "rule": "allowed", "role_version": spec.version, "role_hash": spec.content_hash,
            }  # fmt: skip
            result = "allowed" if kind == AuditEventType.TOOL_DECISION else "ok"
            return kind, f"{tool} {path}", result, details
        if kind == AuditEventType.TOOL_DENIED:
            tool = rng.choice(self.withheld[role] or self.tools[role])
            reason = f"{spec.name} may not use {tool}"
            details = {"tool": tool, "arguments": f'{{"path": "{path}"}}', "reason": reason}
            return kind, f"{tool} {path}", "ACODE-TOL-001", details
        if kind == AuditEventType.CHANGE_RECORDED:
            return kind, path, "modified", {"path": path, "kind": "modified", "lines": 12}
        if kind == AuditEventType.PLAN_UPDATED:
            return kind, "plan", "updated", {"steps": rng.randint(3, 6)}
        if kind == AuditEventType.TRANSITION_DENIED:
            blocked = [s for s in self.roles if s != role and s not in self.rules.get(role, [])]
            target = rng.choice(blocked or [role])
            message = f"Cannot transition from {spec.name} to {self.roles[target].name}."
            return kind, target, "ACODE-ROL-002", {"reason": "try it", "message": message}
        return kind, "title", "updated", {"changed": ["title"]}

    def global_event(self, rng: random.Random) -> tuple[str, str, str, Row]:
        role = rng.choice(list(self.roles))
        if rng.random() < 0.3:
            spec = self.roles[role]
            details = {"number": spec.version or 1, "content_hash": spec.content_hash}
            return AuditEventType.ROLE_EDITED, f"{role} v{spec.version or 1}", "versioned", details
        details = {"kind": "role", "name": role}
        return AuditEventType.ROLE_DATA_CHANGED, f"role {role}", "saved", details
