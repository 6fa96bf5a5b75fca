"""The lock on custom agents (issue 41): what every role write asks of a role that is,
or was, a user's custom agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roles.access import CUSTOM_LOCKED, CUSTOM_LOCKED_REASON
from roles.models import CUSTOM_MAX_LLM_CALLS, CUSTOM_MAX_SECONDS

CUSTOM_LOCKED_CODE = "ACODE-ROL-016"

# A custom agent's fixed limits a job, where the published role schema can see them: a body
# that makes a role custom (the role writes refuse the rest, ACODE-ROL-016).
CUSTOM_SCHEMA = {
    "if": {"properties": {"custom": {"const": True}}, "required": ["custom"]},
    "then": {
        "properties": {
            "max_llm_calls": {"maximum": CUSTOM_MAX_LLM_CALLS},
            "timeout_seconds": {"maximum": CUSTOM_MAX_SECONDS},
        }
    },
}


def custom_lock_problems(content: Mapping[str, Any], *, was_custom: bool) -> list[str]:
    """Why ``content`` cannot be a custom agent's (ACODE-ROL-016): a custom agent never
    holds ``CUSTOM_LOCKED`` permissions nor more than its hard limits a job, and a role that
    was one stays one. Every role write asks (API, admin, import, a published draft);
    ``roles.access.compute_access`` and ``Role.job_budget`` enforce the same whatever is
    stored."""
    slug = content.get("slug")
    custom = content.get("custom")
    if was_custom and custom is not None and custom is not True:
        return [f"role {slug}: a custom agent stays one (custom cannot be unset)"]
    if not (custom or was_custom):
        return []
    problems = []
    held = sorted(set(_codes(content.get("permissions"))) & CUSTOM_LOCKED)
    if held:
        problems.append(f"role {slug}: {CUSTOM_LOCKED_REASON} (it names {', '.join(held)})")
    for field, cap in (
        ("max_llm_calls", CUSTOM_MAX_LLM_CALLS),
        ("timeout_seconds", CUSTOM_MAX_SECONDS),
    ):
        value = content.get(field)
        if isinstance(value, int) and value > cap:
            problems.append(
                f"role {slug}: a custom agent's {field} is at most {cap} (it names {value})"
            )
    return problems


def _codes(value: Any) -> list[str]:
    """Permission codes from content (strings) or an admin form (Permission rows)."""
    return [str(getattr(v, "code", v)) for v in value or ()]
