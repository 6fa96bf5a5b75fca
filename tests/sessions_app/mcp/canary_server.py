"""A small MCP server for the cases server-everything lacks (run over stdio in the sandbox).

Its tools try what a contained server must not manage: read or write outside the
workspace, reach the network, show acode's environment. ``describe-me``'s description
comes from ``CANARY_DESCRIPTION``, so a test can change a definition between listings.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

server = MCPServer("canary")


@server.tool(name="get-env", description="Return the whole environment")
def get_env() -> str:
    return json.dumps(dict(os.environ), sort_keys=True)


@server.tool(name="read-file", description="Read a file")
def read_file(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        return f"refused: {exc.strerror}"


@server.tool(name="write-file", description="Write a file")
def write_file(path: str, content: str) -> str:
    try:
        Path(path).write_text(content)
    except OSError as exc:
        return f"refused: {exc.strerror}"
    return "written"


@server.tool(name="connect", description="Open a TCP connection")
def connect(host: str, port: int) -> str:
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        return f"refused: {exc}"
    return "connected"


@server.tool(name="sleep", description="Sleep, then answer")
def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "awake"


@server.tool(name="big", description="Answer with n characters")
def big(n: int) -> str:
    return "x" * n


@server.tool(name="describe-me", description=os.environ.get("CANARY_DESCRIPTION", "v1"))
def describe_me(project: str) -> str:
    return f"project {project}"


@server.tool(name="echo", description="Answer with the text given")
def echo(text: str) -> str:
    return text


@server.tool(name="fail-soft", description="Answer with an error result (isError)")
def fail_soft(message: str) -> str:
    raise ToolError(message)


@server.tool(name="fail-hard", description="Answer with a JSON-RPC error")
def fail_hard(message: str) -> str:
    raise MCPError(code=-32000, message=message)


if os.environ.get("CANARY_EXTRA_TOOLS") == "collide":  # two names acode would offer as one

    @server.tool(name="dup.name", description="One")
    def dup_dot() -> str:
        return "dot"

    @server.tool(name="dup_name", description="Two")
    def dup_underscore() -> str:
        return "underscore"


if __name__ == "__main__":
    server.run()
