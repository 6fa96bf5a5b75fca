"""The lock on custom agents (issue 41): what every role write asks of a role that is,
or was, a user's custom agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roles.access import CUSTOM_LOCKED, CUSTOM_LOCKED_REASON

CUSTOM_LOCKED_CODE = "ACODE-ROL-016"


def custom_lock_problems(content: Mapping[str, Any], *, was_custom: bool) -> list[str]:
    """Why ``content`` cannot be a custom agent's (ACODE-ROL-016): a custom agent never
    holds ``CUSTOM_LOCKED`` permissions, and a role that was one stays one. Every role write
    asks (API, admin, import, a published draft); ``roles.access.compute_access`` enforces
    the same whatever is stored."""
    slug = content.get("slug")
    custom = content.get("custom")
    if was_custom and custom is not None and custom is not True:
        return [f"role {slug}: a custom agent stays one (custom cannot be unset)"]
    if not (custom or was_custom):
        return []
    held = sorted(set(_codes(content.get("permissions"))) & CUSTOM_LOCKED)
    if held:
        return [f"role {slug}: {CUSTOM_LOCKED_REASON} (it names {', '.join(held)})"]
    return []


def _codes(value: Any) -> list[str]:
    """Permission codes from content (strings) or an admin form (Permission rows)."""
    return [str(getattr(v, "code", v)) for v in value or ()]
