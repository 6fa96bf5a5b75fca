"""Role documents: what a role may do, as the policy diff reads it (``roles.decision.diff``).

A document is what a role version records (``roles.access.role_snapshot``: content,
effective permissions and tools, argument limits) plus what versions do not record: the
network grants of the MCP servers whose tools the role gets (``mcp_servers``) and the
transition rules that lead into it (``entered_from``). Reads only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from roles.access import RoleSpec, ToolSpec, compute_access, parent_chain, role_snapshot
from roles.decision.diff import PolicyDiff, policy_diff
from roles.decision.limits import limits_of
from roles.mcp.models import McpServer
from roles.mcp.tools import argument_limits
from roles.models import TransitionRule
from roles.registry import read_specs
from roles.tools import ToolDeclaration


def tool_declarations(tools: Collection[ToolSpec]) -> dict[str, ToolDeclaration]:
    """Each tool's declaration by name (what a diff decides its counterexamples with)."""
    return {t.name: t.declaration for t in tools}


def role_documents(
    slugs: Collection[str] | None = None,
    *,
    specs: Mapping[str, RoleSpec] | None = None,
    tools: Collection[ToolSpec] | None = None,
) -> dict[str, dict[str, Any]]:
    """The document of each role (or of ``slugs``), from the stored roles or ``specs``."""
    if specs is None or tools is None:
        id_specs, read_tools = read_specs()
        specs = specs if specs is not None else {s.slug: s for _, s in id_specs}
        tools = tools if tools is not None else read_tools
    limits = argument_limits()
    servers = _server_grants()
    entries = _entries()
    servers_of = {t.name: t.declaration.mcp_server for t in tools if t.declaration.mcp_server}
    documents: dict[str, dict[str, Any]] = {}
    for slug in specs if slugs is None else [s for s in slugs if s in specs]:
        access = compute_access(slug, specs, list(tools))
        document = role_snapshot(specs[slug], access, limits_of(slug, specs, limits))
        used = sorted({servers_of[t] for t in access.tools if t in servers_of})
        if used:
            document["mcp_servers"] = {s: servers[s] for s in used if s in servers}
        if entries.get(slug):
            document["entered_from"] = entries[slug]
        documents[slug] = document
    return documents


def _server_grants() -> dict[str, dict[str, Any]]:
    grants = {}
    for server in McpServer.objects.all():
        secrets = sorted({*server.env_secrets.values(), *server.header_secrets.values()})
        grants[server.slug] = {
            "url": server.url or "",
            "command": list(server.command or []),
            "network": bool(server.network),
            "allow_private_network": bool(server.allow_private_network),
            "secrets": secrets,
        }
    return grants


def _entries() -> dict[str, list[dict[str, str]]]:
    entries: dict[str, list[dict[str, str]]] = {}
    for source, target, condition in TransitionRule.objects.values_list(
        "from_role__slug", "to_role__slug", "precondition"
    ).order_by("from_role__slug"):
        entries.setdefault(target, []).append({"from": source, "precondition": condition})
    return entries


# What delegation does not compare: how a role is entered (a sub-agent is started, not
# transitioned to), its budgets (carved out of the parent's) and its flags.
_NOT_DELEGATED = ("entered_from", "max_llm_calls", "max_tokens", "timeout_seconds",
                  "answer_sets_plan", "protected")  # fmt: skip


def delegation_widening(parent: str, child: str) -> PolicyDiff | None:
    """May a job in role ``parent`` hand work to a sub-agent in role ``child`` (issue 41)?
    None when ``child`` is ``parent`` or below it (a child never exceeds its parent,
    ``roles.access.compute_access``), or when the one policy diff finds nothing ``child``
    may do that ``parent`` may not; otherwise that diff (its gains say why not)."""
    if child == parent:
        return None
    id_specs, tools = read_specs()
    specs = {s.slug: s for _, s in id_specs}
    if parent in parent_chain(child, specs):
        return None
    documents = role_documents([parent, child], specs=specs, tools=tools)
    old, new = documents[parent], dict(documents[child])
    for key in _NOT_DELEGATED:
        new.pop(key, None)
        if key in old:
            new[key] = old[key]
    found = policy_diff(old, new, declarations=tool_declarations(tools))
    return found if found.widens else None
