"""What a role may do: the one computation of effective permissions and tools.

Everything here works on plain, immutable specs (built from the database by
``roles.registry``), so the registry, admin, API, executor and benchmarks share it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roles.commands import CommandRule


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the registry sees it."""

    name: str
    description: str
    required_permissions: tuple[str, ...]
    argument_schema: Mapping[str, Any]
    enabled: bool


@dataclass(frozen=True)
class RoleSpec:
    """A role's stored definition, without derived data."""

    slug: str
    name: str
    description: str
    colour: str
    permissions: tuple[str, ...]
    allowed_tools: tuple[str, ...]
    capabilities: tuple[str, ...]
    constraints: tuple[str, ...]
    prompt_key: str
    context_strategy: str
    preferred_model: str
    fallback_model: str
    queue: str
    max_llm_calls: int
    max_tokens: int
    timeout_seconds: int
    parent: str | None
    write_paths: tuple[str, ...]
    command_patterns: tuple[CommandRule, ...]  # see roles.commands
    answer_sets_plan: bool = False

    def content(self) -> dict[str, Any]:
        """The role's stored content as plain JSON-able data (import/export, snapshots)."""
        return {
            "slug": self.slug,
            "name": self.name,
            "description": self.description,
            "colour": self.colour,
            "permissions": sorted(self.permissions),
            "allowed_tools": sorted(self.allowed_tools),
            "capabilities": list(self.capabilities),
            "constraints": list(self.constraints),
            "prompt_key": self.prompt_key,
            "context_strategy": self.context_strategy,
            "preferred_model": self.preferred_model,
            "fallback_model": self.fallback_model,
            "queue": self.queue,
            "max_llm_calls": self.max_llm_calls,
            "max_tokens": self.max_tokens,
            "timeout_seconds": self.timeout_seconds,
            "parent": self.parent,
            "write_paths": list(self.write_paths),
            "command_patterns": list(self.command_patterns),
            "answer_sets_plan": self.answer_sets_plan,
        }


@dataclass(frozen=True)
class WithheldTool:
    """A tool a role does not get, and why."""

    name: str
    description: str
    reason: str
    missing_permissions: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoleAccess:
    """The derived access of one role."""

    permissions: frozenset[str]
    tools: tuple[str, ...]
    withheld: tuple[WithheldTool, ...] = field(default=())

    def allows(self, tool_name: str) -> bool:
        return tool_name in self.tools

    def withheld_reason(self, tool_name: str) -> WithheldTool | None:
        for item in self.withheld:
            if item.name == tool_name:
                return item
        return None


class RoleCycleError(ValueError):
    """The parent chain of a role loops back on itself."""


def parent_chain(slug: str, roles: Mapping[str, RoleSpec]) -> list[str]:
    """Slugs from ``slug``'s parent up to the root; raises RoleCycleError on a loop."""
    chain: list[str] = []
    seen = {slug}
    current = roles[slug].parent
    while current is not None:
        if current in seen:
            raise RoleCycleError(f"role {slug!r} has a parent cycle through {current!r}")
        if current not in roles:
            raise KeyError(current)
        seen.add(current)
        chain.append(current)
        current = roles[current].parent
    return chain


def compute_access(
    slug: str, roles: Mapping[str, RoleSpec], tools: Sequence[ToolSpec]
) -> RoleAccess:
    """Effective tools of a role: enabled tools whose required permissions it holds.

    A child never exceeds its parent: permissions are intersected along the parent
    chain and a tool the parent does not get is withheld from the child. The role's
    allow-list, when set, narrows the result further.
    """
    role = roles[slug]
    chain = parent_chain(slug, roles)
    held = frozenset(role.permissions)
    effective = set(held)
    limiting_parent: dict[str, str] = {}
    for ancestor in chain:
        for perm in effective - set(roles[ancestor].permissions):
            limiting_parent.setdefault(perm, ancestor)
        effective &= set(roles[ancestor].permissions)
    allow = set(role.allowed_tools)
    ancestor_allow = [(a, set(roles[a].allowed_tools)) for a in chain if roles[a].allowed_tools]

    granted: list[str] = []
    withheld: list[WithheldTool] = []
    for tool in sorted(tools, key=lambda t: t.name):
        required = set(tool.required_permissions)
        missing = tuple(sorted(required - held))
        inherited_missing = tuple(sorted((required & held) - effective))
        reason = ""
        if not tool.enabled:
            reason = "tool is disabled"
        elif missing:
            reason = "missing permission " + ", ".join(missing)
        elif inherited_missing:
            parents = sorted({limiting_parent[p] for p in inherited_missing})
            reason = (
                "permission "
                + ", ".join(inherited_missing)
                + " not held by parent role "
                + ", ".join(parents)
            )
            missing = inherited_missing
        elif allow and tool.name not in allow:
            reason = "not in the role's tool allow-list"
        else:
            for ancestor, ancestor_list in ancestor_allow:
                if tool.name not in ancestor_list:
                    reason = f"not in parent role {ancestor}'s tool allow-list"
                    break
        if reason:
            withheld.append(WithheldTool(tool.name, tool.description, reason, missing))
        else:
            granted.append(tool.name)
    return RoleAccess(frozenset(effective), tuple(granted), tuple(withheld))


def role_snapshot(spec: RoleSpec, access: RoleAccess) -> dict[str, Any]:
    """What a role version records: its content plus the tools it had at the time."""
    data = spec.content()
    data["effective_permissions"] = sorted(access.permissions)
    data["effective_tools"] = list(access.tools)
    return data


def content_hash(data: Mapping[str, Any]) -> str:
    """A stable SHA-256 of JSON content (sorted keys, no whitespace)."""
    encoded = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def path_allowed(relative_path: str, write_paths: Sequence[str]) -> bool:
    """True when ``relative_path`` (POSIX, inside the workspace) matches a write glob.

    ``**`` matches any number of directories, ``*`` stays within one. No globs: anywhere.
    """
    if not write_paths:
        return True
    return any(_glob_regex(glob).fullmatch(relative_path) for glob in write_paths)


_GLOB_CACHE: dict[str, re.Pattern[str]] = {}


def _glob_regex(glob: str) -> re.Pattern[str]:
    cached = _GLOB_CACHE.get(glob)
    if cached is not None:
        return cached
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    compiled = re.compile("".join(out))
    _GLOB_CACHE[glob] = compiled
    return compiled


def glob_problem(glob: str) -> str | None:
    """Why a write-path glob is unusable, or None."""
    if not glob.strip():
        return "empty glob"
    if glob.startswith("/") or glob.startswith("~"):
        return f"{glob!r} must be relative to the workspace"
    if any(part == ".." for part in glob.split("/")):
        return f"{glob!r} must not contain '..'"
    return None
