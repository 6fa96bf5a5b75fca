"""A protected role gains nothing without review, whichever write would widen it.

An edit of a protected role itself becomes a draft (``roles.services.drafts``). But a role
also gets what the rest of role data gives it: a tool switched on, a permission renamed or
given to an unprotected parent (a child is capped by its parent), an MCP tool approved, an
argument limit removed, an MCP server's address or grants changed, a transition rule into
it added. Whether a write does is the policy diff's question (``roles.decision.diff``), asked
in two places: every write that versions roles (``role_versions_record``) compares each
protected role's new version with its last one, and the writes that move what versions do
not record (MCP servers, transition rules) compare each protected role's document before
and after (``protected_roles_guard``). Any gain, for the role or a protected role below
it, refuses the write with ACODE-ROL-015 naming the gain, and the whole write rolls back.
Narrowing is never refused: an admin may need to in a hurry.

Writes that are reviewed already pass: publishing a draft (a second admin read it), and an
MCP server offering again a definition an admin approved (``reviewed_write``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from acode.errors import AcodeError
from roles.decision.diff import PolicyDiff, policy_diff
from roles.registry import read_specs
from roles.services.policy import role_documents, tool_declarations
from roles.tools import ToolDeclaration

_reviewed: ContextVar[bool] = ContextVar("acode_reviewed_role_write", default=False)


@contextmanager
def reviewed_write() -> Iterator[None]:
    """Within: role versions may widen protected roles (the write was reviewed)."""
    token = _reviewed.set(True)
    try:
        yield
    finally:
        _reviewed.reset(token)


def protected_widening(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    declarations: Mapping[str, ToolDeclaration] | None = None,
) -> PolicyDiff | None:
    """What a new version (or document) of a role grants that its previous, protected one
    did not: the diff when it gains anything, None when nothing (or it was not protected,
    or the write was reviewed)."""
    if not old.get("protected") or _reviewed.get():
        return None
    diff = policy_diff(old, new, declarations=declarations)
    return diff if diff.widens else None


@contextmanager
def protected_roles_guard() -> Iterator[None]:
    """Around a write that moves what role versions do not record (an MCP server's grants,
    the transition rules into a role): ACODE-ROL-015 at the end when a protected role's
    document gained anything. Call it inside the write's transaction."""
    if _reviewed.get():
        yield
        return
    before = {s: d for s, d in role_documents().items() if d.get("protected")}
    yield
    if not before:
        return
    id_specs, tools = read_specs()
    after = role_documents(before, specs={s.slug: s for _, s in id_specs}, tools=tools)
    known = tool_declarations(tools)
    widened = {}
    for slug, document in before.items():
        found = protected_widening(document, after.get(slug, document), declarations=known)
        if found is not None:
            widened[slug] = found
    protected_widening_check(widened)


def protected_widening_check(widened: Mapping[str, PolicyDiff]) -> None:
    """ACODE-ROL-015 when any protected role (slug -> its diff) would widen, naming the
    gains of each."""
    if not widened:
        return
    parts = [f"{slug} would {_gains_text(diff)}" for slug, diff in sorted(widened.items())]
    raise AcodeError(
        "ACODE-ROL-015",
        "Not saved: a protected role changes only through a draft another admin publishes; "
        + "; ".join(parts)
        + ". Unprotect the role through a draft first, or leave this change out.",
        {"roles": {slug: _details(diff) for slug, diff in widened.items()}},
    )


def _gains_text(diff: PolicyDiff) -> str:
    tools = [
        g.what.removeprefix("gain tool ") for g in diff.gains if g.dimension == "effective_tools"
    ]
    limits = sorted(
        {g.what.split(":", 1)[0] for g in diff.gains if g.dimension == "argument_limits"}
    )
    what = [f"gain tools {', '.join(tools)}"] if tools else []
    if limits:
        what.append(f"have its argument limits of {', '.join(limits)} removed or changed")
    rest = [
        g.text() for g in diff.gains if g.dimension not in ("effective_tools", "argument_limits")
    ]
    what += rest[:4] + ([f"and {len(rest) - 4} more"] if len(rest) > 4 else [])
    return "; ".join(what)


def _details(diff: PolicyDiff) -> dict[str, Any]:
    data: dict[str, Any] = {"gains": [g.as_data() for g in diff.gains]}
    tools = [
        g.what.removeprefix("gain tool ") for g in diff.gains if g.dimension == "effective_tools"
    ]
    if tools:
        data["tools_gained"] = tools
    limits = sorted(
        {g.what.split(":", 1)[0] for g in diff.gains if g.dimension == "argument_limits"}
    )
    if limits:
        data["limits_loosened"] = limits
    return data
