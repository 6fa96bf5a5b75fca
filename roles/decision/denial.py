"""The denial of a tool the role does not have, as the spec shows it (verification step 5).

``role_denial`` writes the text every surface shows: the model's tool result, the job's
events (``acode agent``, ``acode job show``, the API) and the audit row. Its first line is
the spec's, word for word; then the violated constraint (derived from the permission the
role lacks: one short sentence per permission), a suggestion naming a role that has the
tool and that the session may reach by its transition rules, and acode's own reason.

``transition_paths`` finds, for each tool a role lacks, the nearest role reachable by
transition rules that has it; the registry keeps it per role (``with_routes``, once per
snapshot: ``RoleDef.tool_routes``), so the decision stays a pure function of its role.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from roles.access import RoleAccess, WithheldTool

# The constraint a role without the permission is under, and what the permission is for
# (the end of "Transition to Coder role to ..."). A permission missing here is named as is.
CONSTRAINTS: Mapping[str, tuple[str, str]] = {
    "write_files": ("Cannot modify files", "make file changes"),
    "create_files": ("Cannot create files", "create files"),
    "delete_files": ("Cannot delete files", "delete files"),
    "execute_commands": ("Cannot execute commands", "execute commands"),
    "read_files": ("Cannot read files", "read files"),
    "read_secrets": ("Cannot see secret files", "see secret files"),
    "network": ("Cannot reach the network", "reach the network"),
    "approve_changes": ("Cannot approve changes", "approve changes"),
    "ask_human": ("Cannot ask a person", "ask a person"),
    "propose_tasks": ("Cannot propose backlog tasks", "propose backlog tasks"),
}
WHO_TO_ASK = "an admin who may change roles"


@dataclass(frozen=True)
class Route:
    """The nearest role that has a tool: its name and the roles passed through to reach it
    (empty: one transition away)."""

    role: str
    through: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoleNode:
    """What the search reads of a role: its slug, name and effective tools."""

    slug: str
    name: str
    tools: frozenset[str]


@dataclass(frozen=True)
class Edge:
    """A transition rule: from, to, and whether it is the implicit way back to Default."""

    from_slug: str
    to_slug: str
    implicit: bool = False


def transition_paths(
    start: str, nodes: Sequence[RoleNode], edges: Iterable[Edge]
) -> dict[str, Route]:
    """For each tool some reachable role has and ``start`` lacks, the nearest such role:
    fewest transitions, then an explicit rule before the implicit way back to Default,
    then admin order."""
    order = {node.slug: index for index, node in enumerate(nodes)}
    by_slug = {node.slug: node for node in nodes}
    out: dict[str, list[Edge]] = {}
    for edge in edges:
        if edge.from_slug in by_slug and edge.to_slug in by_slug:
            out.setdefault(edge.from_slug, []).append(edge)
    for targets in out.values():
        targets.sort(key=lambda e: (e.implicit, order[e.to_slug]))
    paths: dict[str, tuple[str, ...]] = {start: ()}
    queue = deque([start])
    while queue:  # breadth first: the first path to a role is a shortest one
        slug = queue.popleft()
        for edge in out.get(slug, ()):
            if edge.to_slug not in paths:
                paths[edge.to_slug] = (*paths[slug], edge.to_slug)
                queue.append(edge.to_slug)
    own = by_slug[start].tools if start in by_slug else frozenset()
    routes: dict[str, Route] = {}
    for slug, path in paths.items():  # insertion order: nearest first
        if not path:
            continue
        names = tuple(by_slug[step].name for step in path)
        for tool in sorted(by_slug[slug].tools - own):
            routes.setdefault(tool, Route(names[-1], names[:-1]))
    return routes


def holders(tool: str, nodes: Iterable[RoleNode]) -> list[str]:
    """The names of the roles that have ``tool``."""
    return [node.name for node in nodes if tool in node.tools]


def _constraint(withheld: WithheldTool) -> tuple[str, str]:
    for permission in withheld.missing_permissions:
        if permission in CONSTRAINTS:
            return CONSTRAINTS[permission]
    if withheld.missing_permissions:
        missing = ", ".join(withheld.missing_permissions)
        return f"Cannot use what needs {missing}", f"use {withheld.name}"
    reason = withheld.reason or "the tool is withheld"
    return reason[:1].upper() + reason[1:], f"use {withheld.name}"


def suggestion_text(tool: str, purpose: str, route: Route | None) -> str:
    """The suggestion line: the role to transition to, or who to ask."""
    if route is None:
        return (
            f"No role this session can transition to has {tool}; ask {WHO_TO_ASK} "
            "to grant it to a role you can reach."
        )
    through = f" (through {', '.join(route.through)})" if route.through else ""
    return f"Transition to {route.role} role{through} to {purpose}."


def role_denial(
    role_name: str, tool: str, withheld: WithheldTool, route: Route | None
) -> tuple[str, str]:
    """The denial's text (first line the spec's) and its suggestion line."""
    constraint, purpose = _constraint(withheld)
    suggestion = suggestion_text(tool, purpose, route)
    text = "\n".join(
        (
            f"[ERROR] Tool {tool!r} is not available in current role: {role_name}",
            "",
            "Role Constraint Violation:",
            f"  Current Role: {role_name}",
            f"  Attempted Tool: {tool}",
            f"  Constraint: {constraint}",
            "",
            f"Suggestion: {suggestion}",
            "",
            f"Details: {withheld.reason}.",
        )
    )
    return text, suggestion


class _Role(Protocol):
    @property
    def slug(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def access(self) -> RoleAccess: ...


class _Rule(Protocol):
    @property
    def from_slug(self) -> str: ...
    @property
    def to_slug(self) -> str: ...
    @property
    def implicit(self) -> bool: ...


RoleT = TypeVar("RoleT", bound=_Role)


def with_routes(
    roles: Mapping[str, RoleT], rules: Mapping[str, Iterable[_Rule]]
) -> dict[str, RoleT]:
    """Each role (a dataclass with ``tool_routes``) with ``transition_paths`` from it: what
    the registry keeps of each role (``RoleDef.tool_routes``), once per snapshot."""
    nodes = [RoleNode(r.slug, r.name, frozenset(r.access.tools)) for r in roles.values()]
    edges = [Edge(r.from_slug, r.to_slug, r.implicit) for out in rules.values() for r in out]
    return {
        slug: replace(role, tool_routes=transition_paths(slug, nodes, edges))  # type: ignore[type-var]
        for slug, role in roles.items()
    }
