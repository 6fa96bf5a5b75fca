"""What a role may do: the one computation of effective permissions and tools (what it may
write is ``roles.writes``).

Everything here works on plain, immutable specs (built from the database and the tool
declarations by ``roles.registry``), so the registry, admin, API, executor, containment
and benchmarks share it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roles.commands import CommandRule
from roles.tools import ToolDeclaration, tool_group_of


@dataclass(frozen=True)
class ToolSpec:
    """A declared tool as the registry offers it: the declaration decides what it needs and
    takes; its database row only enables, describes and orders it."""

    declaration: ToolDeclaration
    description: str
    enabled: bool
    position: int = 0
    withheld_reason: str = ""  # why a disabled tool is, when more is known (MCP pinning)

    @property
    def name(self) -> str:
        return self.declaration.name

    @property
    def required_permissions(self) -> tuple[str, ...]:
        return self.declaration.required_permissions

    @property
    def argument_schema(self) -> Mapping[str, Any]:
        return self.declaration.argument_schema


# Delegation limits a role has unless set (issue 41); a role's content names them only
# when set otherwise, so roles from before keep their content hash.
DELEGATION_DEFAULTS: Mapping[str, int] = {"max_sub_agents": 4, "max_delegation_depth": 2}


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
    examples: tuple[Mapping[str, Any], ...] = ()  # see roles.commands.examples
    protected: bool = False  # changes become drafts (roles.services.drafts)
    reassign_models: tuple[str, ...] = ()  # a blocked run step moves on to these, in order
    reasoning_effort: str = ""  # low, medium, high; "": not sent to the model
    custom: bool = False  # a user's custom agent: never holds ``CUSTOM_LOCKED`` (issue 41)
    max_sub_agents: int = 4  # delegation (issue 41): sub-agents one job may start
    max_delegation_depth: int = 2  # and how many levels of them below a job
    allowed_tool_groups: tuple[str, ...] = ()  # the allow-list's groups (``roles.tools``)

    def allow_list(self, tools: Sequence[ToolSpec]) -> frozenset[str] | None:
        """The tool names the role's allow-list lets through, its groups' members among
        ``tools`` included; None when it has no allow-list (every tool its permissions
        unlock)."""
        if not self.allowed_tools and not self.allowed_tool_groups:
            return None
        groups = set(self.allowed_tool_groups)
        named = {t.name for t in tools if tool_group_of(t.declaration) in groups}
        return frozenset(self.allowed_tools) | named

    def content(self) -> dict[str, Any]:
        """The role's stored content as plain JSON-able data (import/export, snapshots)."""
        data: dict[str, Any] = {
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
        # Only when there are some, so a role without examples keeps its content hash
        # (and its version) from before roles had examples.
        if self.examples:
            data["examples"] = [dict(example) for example in self.examples]
        if self.protected:  # likewise: only when set
            data["protected"] = True
        if self.reassign_models:  # likewise
            data["reassign_models"] = list(self.reassign_models)
        if self.reasoning_effort:  # likewise
            data["reasoning_effort"] = self.reasoning_effort
        if self.custom:  # likewise
            data["custom"] = True
        if self.allowed_tool_groups:  # likewise
            data["allowed_tool_groups"] = sorted(self.allowed_tool_groups)
        for name, default in DELEGATION_DEFAULTS.items():  # likewise: only when not default
            if getattr(self, name) != default:
                data[name] = getattr(self, name)
        return data


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
    granted: tuple[ToolDeclaration, ...] = field(default=())  # the declarations of ``tools``

    def allows(self, tool_name: str) -> bool:
        return tool_name in self.tools

    def declaration(self, tool_name: str) -> ToolDeclaration | None:
        """The declaration of a tool the role gets (None when it does not get it)."""
        for item in self.granted:
            if item.name == tool_name:
                return item
        return None

    def withheld_reason(self, tool_name: str) -> WithheldTool | None:
        for item in self.withheld:
            if item.name == tool_name:
                return item
        return None


# What a custom agent (a role a user made, issue 41) never holds, whatever its data says:
# writing (files, or a command's layer), running commands, the network. Enforced here,
# where effective permissions are computed, for the role and every role below it; the
# role writes refuse such data too (``roles.validation.custom_lock_problems``).
CUSTOM_LOCKED: frozenset[str] = frozenset(
    {"create_files", "write_files", "delete_files", "execute_commands", "network"}
)
CUSTOM_LOCKED_REASON = "a custom agent never holds write, execute or network permissions"


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
    allow-list (tools and tool groups), when set, narrows the result further. A custom
    agent, and every role below one, never holds ``CUSTOM_LOCKED``.
    """
    role = roles[slug]
    chain = parent_chain(slug, roles)
    locked = any(roles[s].custom for s in (slug, *chain))
    held = frozenset(role.permissions) - (CUSTOM_LOCKED if locked else frozenset())
    effective = set(held)
    limiting_parent: dict[str, str] = {}
    for ancestor in chain:
        for perm in effective - set(roles[ancestor].permissions):
            limiting_parent.setdefault(perm, ancestor)
        effective &= set(roles[ancestor].permissions)
    allow = role.allow_list(tools)
    ancestor_allow = [(a, roles[a].allow_list(tools)) for a in chain]

    granted: list[ToolDeclaration] = []
    withheld: list[WithheldTool] = []
    for tool in sorted(tools, key=lambda t: t.name):
        required = set(tool.required_permissions)
        missing = tuple(sorted(required - held))
        inherited_missing = tuple(sorted((required & held) - effective))
        reason = ""
        if not tool.enabled:
            reason = tool.withheld_reason or "tool is disabled"
        elif locked and required & CUSTOM_LOCKED:
            reason = CUSTOM_LOCKED_REASON
            missing = tuple(sorted(required & CUSTOM_LOCKED))
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
        elif allow is not None and tool.name not in allow:
            reason = "not in the role's tool allow-list"
        else:
            for ancestor, ancestor_list in ancestor_allow:
                if ancestor_list is not None and tool.name not in ancestor_list:
                    reason = f"not in parent role {ancestor}'s tool allow-list"
                    break
        if reason:
            withheld.append(WithheldTool(tool.name, tool.description, reason, missing))
        else:
            granted.append(tool.declaration)
    names = tuple(t.name for t in granted)
    return RoleAccess(frozenset(effective), names, tuple(withheld), tuple(granted))


def role_snapshot(
    spec: RoleSpec,
    access: RoleAccess,
    limits: Mapping[str, Sequence[tuple[str, Mapping[str, Any]]]] | None = None,
) -> dict[str, Any]:
    """What a role version records: its content plus the tools it had at the time, and
    the argument limits it was held to (its own and its ancestors', each with the role that
    set it). A role without limits records no such key, so its hash is what it was before
    limits existed."""
    data = spec.content()
    data["effective_permissions"] = sorted(access.permissions)
    data["effective_tools"] = list(access.tools)
    if limits:
        data["argument_limits"] = [
            {"tool": tool, "role": owner, "schema": dict(schema)}
            for tool in sorted(limits)
            for owner, schema in limits[tool]
        ]
    return data


def content_hash(data: Mapping[str, Any]) -> str:
    """A stable SHA-256 of JSON content (sorted keys, no whitespace)."""
    encoded = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()
