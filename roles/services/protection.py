"""A protected role gains nothing without review, whichever write would widen it.

An edit of a protected role itself becomes a draft (``roles.services.drafts``). But a role
also gets what the rest of role data gives it: a tool switched on, a permission renamed, an
unprotected parent widened (a child is capped by its parent), an MCP tool approved, an
argument limit removed. Every such write versions the roles it moves
(``role_versions_record``), so the check sits there, once for all of them: a new version of
a protected role that gains a tool, or loses or changes an argument limit, is refused with
ACODE-ROL-015 and the whole write rolls back. Narrowing (a tool switched off, a limit
added) is never refused: an admin may need to in a hurry.

Writes that are reviewed already pass: publishing a draft (a second admin read it), and an
MCP server offering again a definition an admin approved (``reviewed_write``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from acode.errors import AcodeError

_reviewed: ContextVar[bool] = ContextVar("acode_reviewed_role_write", default=False)


@contextmanager
def reviewed_write() -> Iterator[None]:
    """Within: role versions may widen protected roles (the write was reviewed)."""
    token = _reviewed.set(True)
    try:
        yield
    finally:
        _reviewed.reset(token)


def protected_widening(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """What a new version gives a role its previous (protected) version did not have: tools
    gained, and argument limits gone or changed ({} when nothing, or it was not protected)."""
    if not old.get("protected") or _reviewed.get():
        return {}
    gained = sorted(set(new.get("effective_tools", ())) - set(old.get("effective_tools", ())))
    now = {_limit_key(item) for item in new.get("argument_limits", ())}
    loosened = sorted(
        str(item.get("tool"))
        for item in old.get("argument_limits", ())
        if _limit_key(item) not in now
    )
    found: dict[str, Any] = {}
    if gained:
        found["tools_gained"] = gained
    if loosened:
        found["limits_loosened"] = loosened
    return found


def protected_widening_check(widened: Mapping[str, Mapping[str, Any]]) -> None:
    """ACODE-ROL-015 when any protected role (slug -> ``protected_widening``) would widen."""
    if not widened:
        return
    parts = []
    for slug, found in sorted(widened.items()):
        what = [f"gain tools {', '.join(found['tools_gained'])}"] if "tools_gained" in found else []
        if "limits_loosened" in found:
            loosened = ", ".join(found["limits_loosened"])
            what.append(f"have its argument limits of {loosened} removed or changed")
        parts.append(f"{slug} would {' and '.join(what)}")
    raise AcodeError(
        "ACODE-ROL-015",
        "Not saved: a protected role changes only through a draft another admin publishes; "
        + "; ".join(parts)
        + ". Unprotect the role through a draft first, or leave this change out.",
        {"roles": {slug: dict(found) for slug, found in widened.items()}},
    )


def _limit_key(item: Mapping[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, separators=(",", ":"), default=str)
