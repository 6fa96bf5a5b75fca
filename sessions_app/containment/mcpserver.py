"""An MCP server's own side: how to reach it (``McpEndpoint``), how it fails
(``McpFailure``), and a stdio server's process, started in the command sandbox with the one
view of the workspace (``process_view``) and spoken to one JSON-RPC message a line."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import ExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types
from anyio.abc import Process
from mcp.shared.message import SessionMessage

from sessions_app.containment import sandbox
from sessions_app.containment.bwrap import bwrap_options
from sessions_app.containment.layer import Layer
from sessions_app.containment.process import Limits, _launcher
from sessions_app.containment.view import WorkspaceSight, process_view

logger = logging.getLogger(__name__)

# The ACODE codes of the failures (acode/error_codes.toml documents them).
MCP_UNAVAILABLE = "ACODE-MCP-001"
OUTPUT_CAP = "ACODE-MCP-003"


class McpFailure(Exception):
    """A server could not be started, reached, or answered badly; ``code`` is an ACODE code,
    ``message`` acode's words and ``detail`` the server's own (outside text: its error
    message, the end of its stderr), which reaches a model only as untrusted data."""

    def __init__(self, code: str, message: str, detail: str = "") -> None:
        super().__init__(f"{message}: {detail}" if detail else message)
        self.code = code
        self.message = message
        self.detail = detail


@dataclass(frozen=True)
class McpEndpoint:
    """How to reach one server, resolved from its registration (secrets already looked up)."""

    name: str
    transport: str  # "stdio" or "http"
    argv: tuple[str, ...] = ()
    url: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    network: bool = False
    workspace: Path | None = None  # None: an empty directory of its own
    sight: WorkspaceSight | None = None  # what of the workspace it may see (the one view)
    ro_paths: tuple[Path, ...] = ()  # the server's own files (e.g. its node_modules)
    layer: Layer | None = None  # writes land here (the workspace stays as it was)
    start_timeout: float = 30.0
    call_timeout: float = 60.0
    max_output: int = 256 << 10  # characters of a tool result kept
    limits: Limits = field(default_factory=Limits)


@asynccontextmanager
async def sandboxed_stdio(
    endpoint: McpEndpoint, stderr: IO[bytes] | None
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio framing (one JSON-RPC message a line) to a process we start ourselves:
    the SDK's own ``stdio_client`` cannot pass bwrap its options descriptor, and would hand
    the server parts of acode's environment."""
    with ExitStack() as stack:
        command, cwd, env, fds = _server_command(endpoint, stack)
        process = await anyio.open_process(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            cwd=cwd, env=env, start_new_session=True, pass_fds=fds,
        )  # fmt: skip
        for fd in fds:  # the child has its copy now
            os.close(fd)
        stack.callback(_kill, process)
        reader_send, reader = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        writer, writer_receive = anyio.create_memory_object_stream[SessionMessage](0)
        cap = max(endpoint.max_output * 4, 1 << 20)  # a line is JSON around the output

        async def read_lines() -> None:
            assert process.stdout is not None
            buffer = b""
            async with reader_send:
                with suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
                    async for chunk in process.stdout:
                        buffer += chunk
                        *lines, buffer = buffer.split(b"\n")
                        for line in lines:
                            if line.strip():
                                await reader_send.send(_parse(line))
                        if len(buffer) > cap:
                            await reader_send.send(
                                McpFailure(OUTPUT_CAP, f"a message over {cap} bytes")
                            )
                            return

        async def write_lines() -> None:
            assert process.stdin is not None
            async with writer_receive:
                with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    async for message in writer_receive:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await process.stdin.send(data.encode() + b"\n")

        async with anyio.create_task_group() as group:
            group.start_soon(read_lines)
            group.start_soon(write_lines)
            try:
                yield reader, writer
            finally:
                _kill(process)
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await process.aclose()  # pipes closed and the process reaped
                group.cancel_scope.cancel()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _kill(process: Process) -> None:
    """SIGKILL the server's process group: bwrap (the sandbox's pid 1) takes everyone in it."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _server_command(
    endpoint: McpEndpoint, stack: ExitStack
) -> tuple[list[str], str, dict[str, str], tuple[int, ...]]:
    """The argv, working directory, environment and descriptors that start a stdio server."""
    if not endpoint.argv:
        raise McpFailure(MCP_UNAVAILABLE, f"MCP server {endpoint.name} has no command")
    if endpoint.workspace is None:
        workspace = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="acode-mcp-")))
    else:
        workspace = endpoint.workspace
    try:
        ws = sandbox._checked_dir(workspace.resolve(), "workspace")
        extra = [
            sandbox._checked_dir(p, "read-only path", allow_file=True) for p in endpoint.ro_paths
        ]
        if endpoint.workspace is not None and endpoint.sight is None:
            raise ValueError("a server in a workspace needs the role's sight of it (one view)")
        sight = endpoint.sight if endpoint.workspace is not None else None
        view = process_view(sight, workspace=Path(ws), layer=endpoint.layer, extra_env=endpoint.env)
    except ValueError as exc:
        raise McpFailure(MCP_UNAVAILABLE, f"MCP server {endpoint.name}: {exc}") from exc
    if not sandbox.sandbox_required():
        # Development only (ACODE_SANDBOX=off), as for commands: nothing contains it (nor
        # offers it writes: it runs in the workspace, so only read-only roles may use it).
        if endpoint.layer is not None:
            raise McpFailure(
                MCP_UNAVAILABLE, f"MCP server {endpoint.name}: writes need the sandbox's layer"
            )
        logger.warning("ACODE_SANDBOX=off: MCP server %s runs UNSANDBOXED", endpoint.name)
        env = {k: v for k, v in view.env if k not in ("GIT_DIR", "GIT_WORK_TREE")}
        return list(endpoint.argv), ws, env, ()
    status = sandbox.sandbox_available()
    if not status.available or status.binary is None:
        raise McpFailure("ACODE-TOL-003", f"MCP server {endpoint.name}: {status.reason}")
    writable = endpoint.layer is not None
    if writable and not status.overlay:
        raise McpFailure("ACODE-TOL-004", f"MCP server {endpoint.name}: {status.overlay_reason}")
    options = bwrap_options(status, ws, writable, endpoint.network, endpoint.limits, extra, view)
    fd = os.memfd_create("bwrap-args", 0)  # inherited by bwrap, which reads it once
    os.write(fd, b"".join(os.fsencode(o) + b"\0" for o in options))
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    # Rlimits as for commands, where prlimit exists (a preexec_fn cannot pass through anyio).
    prefix, _ = _launcher(endpoint.limits, None)
    command = [*prefix, status.binary, "--args", str(fd), "--", *endpoint.argv]
    # bwrap itself gets an empty environment: it is readable as /proc/1/environ inside.
    return command, ws, {}, (fd,)
