"""The one implementation every MCP tool runs (``ToolDeclaration.kind == "mcp"``).

It runs only after the executor's one check (role, schema, the role's argument limits)
passed. The server is the job's (started on first use, listed again, killed with the job);
what it answers (and its errors) is data from outside acode: the executor hands it to the
one channel, which redacts it and marks it as untrusted.
"""

from __future__ import annotations

from typing import Any

from roles.mcp.tools import server_permission
from roles.tools import ToolDeclaration
from sessions_app.agent.mcp.client import TOOL_ERROR, UNAVAILABLE
from sessions_app.agent.mcp.servers import NOT_APPROVED
from sessions_app.agent.tools import ToolContext, ToolResult
from sessions_app.containment import McpFailure
from sessions_app.models import AgentSession, AuditEventType
from sessions_app.services.audit import audit_record

DENIED = "ACODE-ROL-003"


def run_mcp_tool(
    context: ToolContext, declaration: ToolDeclaration, arguments: dict[str, Any]
) -> ToolResult:
    """Call the tool on its server; raises ``McpFailure`` (an ACODE code) when it fails."""
    server, tool = declaration.mcp_server, declaration.mcp_tool
    if context.mcp is None or not server or not tool:
        raise McpFailure(UNAVAILABLE, f"{declaration.name}: no MCP servers in this job")
    if server_permission(server) not in declaration.permissions:  # never another server's
        raise McpFailure(NOT_APPROVED, f"{declaration.name} is not a tool of {server}")
    writes = context if context.may_write else None  # its writes go to a layer of its own
    result = context.mcp.call_named(
        server, tool, arguments, pinned_hash=declaration.pinned_hash, writes=writes,
        sight=context.sight(),
    )  # fmt: skip
    if result.is_error:  # the server's words: untrusted data, like its answers
        raise McpFailure(
            TOOL_ERROR, f"{declaration.name} answered with an error", result.text[:4000]
        )
    output = result.text  # the one channel marks it as untrusted (containment.channel)
    summary = "ok (output truncated)" if result.truncated else "ok"
    details = {
        "server": server,
        "definition_hash": declaration.pinned_hash,
        "truncated": result.truncated,
    }
    return ToolResult(output, declaration.name, summary, details)


def mcp_servers_close(
    context: ToolContext, *, session: AgentSession | None = None, role: str = "", actor: str = ""
) -> dict[str, Any]:
    """Kill the job's MCP servers and apply what they wrote (as far as the role may): by
    server, the paths recorded as pending changes and those discarded, with the rule. Each
    server whose writes were discarded gets a ``ToolDenied`` row (phase "mcp_writes")."""
    if context.mcp is None:
        return {}
    applied = context.mcp.close()
    out = {
        slug: {"recorded": [w.path for w in writes.allowed], "discarded": writes.denied}
        for slug, writes in applied.items()
        if writes.allowed or writes.denied
    }
    for slug, writes in applied.items():
        if session is not None and writes.denied:
            rules = sorted({d["rule"] for d in writes.denied})
            audit_record(
                event_type=AuditEventType.TOOL_DENIED, actor=actor, session=session, role=role,
                target=f"mcp server {slug}", result=DENIED,
                details={"phase": "mcp_writes", "rule": rules[0], "rules": rules,
                         "count": len(writes.denied), "discarded": writes.denied[:100],
                         "code": DENIED, "tool": f"mcp__{slug}"},
            )  # fmt: skip
    return out
