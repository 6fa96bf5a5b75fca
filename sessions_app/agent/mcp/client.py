"""Talking to one MCP server, contained: the official ``mcp`` SDK over a sandboxed stdio
process or a registered HTTP URL, behind a small synchronous interface.

A stdio server runs in the command sandbox (bubblewrap, options through a memfd so no argv
shows its secrets): the system, the workspace and its own files read-only, no network
unless granted, ``BASE_ENV`` plus its named secrets only. A role that may write gives it
the workspace as an overlay whose writes land in ``endpoint.layer``, applied by the caller
through the write rule once the server is dead. It lives as long as its ``McpConnection``
(one per job). Failures are ``McpFailure`` with an ACODE code; nothing here reads the
database (the caller resolves a registration into an ``McpEndpoint``).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from typing import IO, Any

import anyio
import httpx
import mcp_types
from anyio.from_thread import start_blocking_portal
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from acode.metrics import observe_mcp_call
from sessions_app.containment import MCP_UNAVAILABLE, McpEndpoint, McpFailure, sandboxed_stdio

__all__ = [
    "McpConnection",
    "McpEndpoint",
    "McpFailure",
    "ToolDefinition",
    "ToolResult",
]

logger = logging.getLogger(__name__)

# The ACODE codes of the failures (acode/error_codes.toml documents them).
UNAVAILABLE = MCP_UNAVAILABLE
TIMED_OUT = "ACODE-MCP-002"
TOOL_ERROR = "ACODE-MCP-005"
STDERR_KEPT = 2000  # characters of a server's stderr kept for its last error


@dataclass(frozen=True)
class ToolDefinition:
    """What a server says one tool is: all of it reaches the model, so all of it is pinned."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    annotations: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The definition as stored and pinned (``roles.services.mcp`` hashes it)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "annotations": dict(self.annotations),
        }


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer as text (capped), whether the server flagged it as an error."""

    text: str
    is_error: bool
    truncated: bool = False


class McpConnection(AbstractContextManager["McpConnection"]):
    """One live connection to a server: opened per job, closed (its process killed) with it.

    The SDK is asynchronous; a blocking portal runs its event loop in a thread of its own,
    so the synchronous agent loop and Celery tasks call ``list_tools`` and ``call_tool``.
    """

    def __init__(self, endpoint: McpEndpoint) -> None:
        self.endpoint = endpoint
        self._stack = ExitStack()
        self._client: Client | None = None
        self._portal: Any = None
        self._stderr: IO[bytes] | None = None
        self._generation: int | None = None

    def __enter__(self) -> McpConnection:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Start (stdio) or reach (HTTP) the server and complete the MCP handshake."""
        self._generation = self._view_generation()
        try:
            self._portal = self._stack.enter_context(start_blocking_portal())
            if self.endpoint.transport == "stdio":
                self._stderr = self._stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
            self._client = self._stack.enter_context(
                self._portal.wrap_async_context_manager(self._connect())
            )
        except McpFailure:
            self.close()
            raise
        except Exception as exc:  # the SDK and transports raise many kinds; all mean "down"
            detail = self._describe(exc)
            self.close()
            raise McpFailure(
                UNAVAILABLE, f"MCP server {self.endpoint.name} could not be reached", detail
            ) from exc

    def close(self) -> None:
        """Close the session and kill the server's sandbox (idempotent)."""
        self._client = None
        with suppress(Exception):  # closing must never fail the job it ends
            self._stack.close()

    def list_tools(self) -> list[ToolDefinition]:
        """Every tool the server lists now (all pages)."""
        return list(self._run(self._list_tools, self.endpoint.start_timeout))

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call one tool; its text output is capped at ``endpoint.max_output`` characters."""
        if self._generation is not None and self._view_generation() != self._generation:
            # What the role may not read moved since the server started (another session
            # wrote a secret file): its view is stale, so it starts again with the new one.
            self.close()
            self.open()
        started, outcome = time.monotonic(), "error"
        try:
            result: ToolResult = self._run(
                lambda: self._call(name, dict(arguments)), self.endpoint.call_timeout
            )
            outcome = "error" if result.is_error else "ok"
            return result
        except McpFailure as failure:
            outcome = "timeout" if failure.code == TIMED_OUT else "error"
            raise
        finally:
            seconds = time.monotonic() - started
            observe_mcp_call(server=self.endpoint.name, tool=name, seconds=seconds, outcome=outcome)

    def _view_generation(self) -> int | None:
        """The generation of the hidden files a stdio server's view was built from (None:
        the server sees no workspace, or sees all of it)."""
        sight = self.endpoint.sight
        if self.endpoint.transport != "stdio" or sight is None or sight.read_secrets:
            return None
        return sight.index.generation()

    def stderr_tail(self) -> str:
        """The end of what a stdio server wrote to stderr (for its last error)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_KEPT))
        return self._stderr.read().decode(errors="replace").strip()

    # -- inside the portal's event loop ----------------------------------------------
    def _run(self, call: Any, timeout: float) -> Any:
        if self._client is None or self._portal is None:
            raise McpFailure(UNAVAILABLE, f"MCP server {self.endpoint.name} is not connected")

        async def bounded() -> Any:
            with anyio.fail_after(timeout):
                return await call()

        try:
            return self._portal.call(bounded)
        except McpFailure:
            raise
        except TimeoutError as exc:
            raise McpFailure(
                TIMED_OUT, f"MCP server {self.endpoint.name} did not answer within {timeout:g} s"
            ) from exc
        except MCPError as exc:
            raise McpFailure(
                TOOL_ERROR,
                f"MCP server {self.endpoint.name} answered with an error",
                str(exc.error.message),
            ) from exc
        except Exception as exc:
            detail = self._describe(exc)
            raise McpFailure(
                UNAVAILABLE, f"MCP server {self.endpoint.name} failed", detail
            ) from exc

    def _describe(self, exc: BaseException) -> str:
        if isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        detail = str(exc) or type(exc).__name__
        tail = self.stderr_tail()
        return f"{detail}; stderr: {tail[-500:]}" if tail else detail

    async def _list_tools(self) -> list[ToolDefinition]:
        assert self._client is not None
        out: list[ToolDefinition] = []
        cursor: str | None = None
        for _ in range(100):  # a server that pages forever cannot hang a job
            page = await self._client.list_tools(cursor=cursor)
            for tool in page.tools:
                annotations = (
                    tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}
                )
                out.append(
                    ToolDefinition(
                        tool.name, tool.description or "", tool.input_schema, annotations
                    )
                )
            cursor = page.next_cursor
            if not cursor:
                break
        return out

    async def _call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        assert self._client is not None
        result = await self._client.call_tool(name, arguments)
        parts: list[str] = []
        for item in result.content:
            if isinstance(item, mcp_types.TextContent):
                parts.append(item.text)
            else:  # images, audio, resources: named, not inlined into the model's context
                parts.append(f"[{item.type} content omitted]")
        if not parts and result.structured_content is not None:
            parts.append(json.dumps(result.structured_content, sort_keys=True))
        text = "\n".join(parts)
        cap = self.endpoint.max_output
        if len(text) > cap:
            return ToolResult(text[:cap], bool(result.is_error), truncated=True)
        return ToolResult(text, bool(result.is_error))

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Client]:
        endpoint = self.endpoint
        if endpoint.transport == "stdio":
            transport: Any = sandboxed_stdio(endpoint, self._stderr)
            http: httpx.AsyncClient | None = None
        else:
            http = httpx.AsyncClient(
                headers=dict(endpoint.headers),
                timeout=httpx.Timeout(endpoint.call_timeout),
                follow_redirects=False,  # the registered URL only, never where it points
                trust_env=False,  # no proxy or .netrc of the server's environment
            )
            transport = streamable_http_client(endpoint.url, http_client=http)  # type: ignore[arg-type]
        try:
            async with Client(
                transport, read_timeout_seconds=endpoint.start_timeout, cache=None, mode="legacy"
            ) as client:
                yield client
        finally:
            if http is not None:
                await http.aclose()
