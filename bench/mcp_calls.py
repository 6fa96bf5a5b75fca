"""MCP overhead (named so, not mcp.py, which would shadow the SDK's package): acode's policy check and audit on an MCP tool call, against a direct SDK
call to the same server (the same sandboxed server-everything process), in the same run.

Direct: ``McpConnection.call_tool`` (the official SDK over the sandboxed stdio transport).
Through acode: ``tool_execute`` on the same connection: the one tool check (role, schema,
argument limits), the audit row before, the call, the pinned-definition check, the audit
row after, redaction and the untrusted-data marking. No target: the figure is reported.
Needs node and ``make mcp-servers``; skipped (printed) without them.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Callable

from _report import record
from _setup import ROOT, django_setup, fmt_time

RUNS = 200
ENTRY = ROOT / "var/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def p50(fn: Callable[[], object], runs: int = RUNS) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    if shutil.which("node") is None or not ENTRY.is_file():
        print("skip: node or server-everything missing (make mcp-servers)")
        return 0
    django_setup()
    from django.contrib.auth.models import User

    from roles.models import McpServer, McpToolDefinition, Permission, Role
    from roles.registry import registry
    from roles.services import role_saved
    from roles.services.mcp import mcp_server_delete, mcp_server_save, mcp_tool_approve
    from sessions_app.agent.executor import tool_execute
    from sessions_app.agent.mcp.servers import mcp_server_refresh
    from sessions_app.agent.tool_context import tool_context
    from sessions_app.services.jobs import job_create
    from sessions_app.services.sessions import session_create

    slug = f"bench-{uuid.uuid4().hex[:6]}"
    server = mcp_server_save(
        server=McpServer(slug=slug, command=["node", str(ENTRY), "stdio"],
                         read_only_paths=[str(ENTRY.parents[3])]),
        actor="bench",
    )  # fmt: skip
    role = Role.objects.get(slug="default")
    permission = Permission.objects.get(code=f"mcp-{slug}")
    try:
        mcp_server_refresh(server=server, actor="bench")
        echo = mcp_tool_approve(tool=McpToolDefinition.objects.get(server=server, name="echo"))
        role.permissions.add(permission)
        role_saved(role=role, actor="bench")
        registry.sync()
        user, _ = User.objects.get_or_create(username="bench")
        session = session_create(owner=user, title="bench mcp", task="bench/mcp.py")
        job = job_create(session=session, request="bench", user=user)
        context = tool_context(job, session, [])
        connection = context.mcp.connection(server)
        name = f"mcp__{slug}__echo"
        arguments = {"message": "hello"}

        def direct() -> object:
            return connection.call_tool(echo.name, arguments)

        def through_acode() -> object:
            outcome = tool_execute(
                session=session, role=registry.get("default"), tool=name,
                arguments=arguments, actor="bench", context=context, job=job,
            )  # fmt: skip
            assert outcome.status == "ok", outcome
            return outcome

        direct_p50 = p50(direct)
        acode_p50 = p50(through_acode)
        context.mcp.close()
    finally:
        role.permissions.remove(permission)
        role_saved(role=role, actor="bench")
        mcp_server_delete(server=server, actor="bench")
        permission.delete()
    overhead = acode_p50 - direct_p50
    print(f"info direct SDK call p50 {fmt_time(direct_p50)}")
    print(f"info through acode (check, audit before and after, call) p50 {fmt_time(acode_p50)}")
    print(f"info overhead p50 {fmt_time(overhead)}")
    record("MCP echo, direct SDK call p50", direct_p50 * 1000, "ms")
    record("MCP echo through acode's check and audit p50", acode_p50 * 1000, "ms",
           baseline=direct_p50 * 1000)  # fmt: skip
    record("policy check and audit overhead p50", overhead * 1000, "ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
