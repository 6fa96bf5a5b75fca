"""MCP servers at work: resolve a registration into a contained endpoint, list its tools
(pinning each definition), and keep one connection per server for a job's lifetime.

Secrets are looked up here, at the last moment, from acode's environment by the names the
registration gives; only those values reach the server (its sandbox starts empty).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from roles.mcp.models import private_address, url_problem
from roles.mcp.tools import mcp_tool_name
from roles.models import McpServer, McpToolDefinition
from roles.services.mcp import (
    acode_secret_names,
    mcp_definitions_record,
    mcp_server_status_record,
)
from sessions_app.agent.mcp.client import UNAVAILABLE, McpConnection, ToolResult
from sessions_app.containment import (
    CommandWrites,
    Layer,
    Limits,
    McpEndpoint,
    McpFailure,
    WorkspaceSight,
    command_writes,
    layer_create,
    workspace_sight,
)
from sessions_app.services.secrets import workspace_index

MISSING_SECRET = "ACODE-MCP-006"
NOT_APPROVED = "ACODE-MCP-004"
ADDRESS_REFUSED = "ACODE-MCP-011"


def mcp_endpoint(
    server: McpServer, *, workspace: Path | None = None, sight: WorkspaceSight | None = None
) -> McpEndpoint:
    """The contained endpoint of ``server``; ``McpFailure`` when a named secret is unset or
    an HTTP server's address is refused. ``sight``: what the role's processes may see of
    ``workspace`` (the one view)."""
    if server.transport == "http":
        _address_check(server)
    return McpEndpoint(
        name=server.slug,
        transport=server.transport,
        argv=tuple(server.command),
        url=server.url,
        env=_secrets(server, server.env_secrets),
        headers=_secrets(server, server.header_secrets),
        network=server.network,
        workspace=workspace,
        sight=sight,
        ro_paths=tuple(Path(p) for p in server.read_only_paths),
        start_timeout=float(getattr(settings, "ACODE_MCP_START_TIMEOUT", 30)),
        call_timeout=float(server.call_timeout_seconds),
        max_output=server.max_output_chars,
        limits=Limits(),
    )


def _address_check(server: McpServer) -> None:
    """The registration's URL as the rules stand now, and where its host resolves: a name
    that resolves to a private address is refused like the address itself."""
    problem = url_problem(server.url, allow_private=server.allow_private_network)
    if problem is None and not server.allow_private_network:
        host = urlsplit(server.url).hostname or ""
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise McpFailure(
                UNAVAILABLE, f"MCP server {server.slug}: {host} does not resolve", str(exc)
            ) from exc
        for *_, sockaddr in infos:
            if private_address(ipaddress.ip_address(str(sockaddr[0]).split("%")[0])):
                problem = f"{host} resolves to {sockaddr[0]}, a private address"
                break
    if problem:
        raise McpFailure(ADDRESS_REFUSED, f"MCP server {server.slug}: {problem}")


def _secrets(server: McpServer, names: Mapping[str, str]) -> dict[str, str]:
    own = sorted(source for source in names.values() if source in acode_secret_names())
    if own:
        raise McpFailure(
            MISSING_SECRET, f"MCP server {server.slug}: {', '.join(own)} is acode's own setting"
        )
    missing = [source for source in names.values() if source not in os.environ]
    if missing:
        raise McpFailure(
            MISSING_SECRET,
            f"MCP server {server.slug}: acode's environment has no {', '.join(sorted(missing))}",
        )
    return {target: os.environ[source] for target, source in names.items()}


def mcp_server_refresh(*, server: McpServer, actor: str = "system") -> list[McpToolDefinition]:
    """List the server's tools now and pin them (``roles.services.mcp``); the server's
    status and last error record how it went (it runs in an empty directory of its own).
    Raises ``McpFailure`` when it cannot be reached."""
    try:
        with McpConnection(mcp_endpoint(server)) as connection:
            listed = connection.list_tools()
    except McpFailure as failure:
        mcp_server_status_record(server=server, error=f"{failure.code}: {failure}")
        raise
    mcp_server_status_record(server=server)  # before the listing: it may note refused names
    return mcp_definitions_record(
        server=server, definitions=[t.as_dict() for t in listed], actor=actor
    )


def mcp_server_refresh_asked(
    *, server: McpServer, actor: str
) -> list[McpToolDefinition] | McpFailure:
    """A person's refresh (API, admin): like ``mcp_server_refresh``, but a server that cannot
    be reached is returned, not raised (it is the server's state, recorded on it)."""
    try:
        return mcp_server_refresh(server=server, actor=actor)
    except McpFailure as failure:
        return failure


class JobMcpServers:
    """The MCP servers of one job: each started on first use, all killed when the job ends.

    A server is listed again when it starts, so a definition that changed since the last
    listing is disabled before any call of this job reaches it.
    """

    def __init__(self, *, workspace: Path | None, actor: str = "system") -> None:
        self.workspace = workspace
        self.actor = actor
        self._open: dict[str, McpConnection] = {}
        self._layers: dict[str, tuple[Layer, Any]] = {}  # slug -> (layer, the call's context)

    def __enter__(self) -> JobMcpServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(
        self, server: McpServer, *, writes: Any = None, sight: WorkspaceSight | None = None
    ) -> McpConnection:
        """The job's live connection to ``server`` (started, listed and pinned on first use).

        ``writes``: the tool context of a role that may write (``layers_root`` and its
        ``write_target``); the server then writes to a layer of its own, applied as a
        command's writes (``containment.command_writes``) when it is closed."""
        if server.slug in self._open:
            return self._open[server.slug]
        layer = layer_create(writes.layers_root) if writes is not None else None
        if sight is None and self.workspace is not None:  # a role that reads no secrets
            index = workspace_index(self.workspace, live=True)
            sight = workspace_sight(self.workspace, index, git_dir=None, read_secrets=False)
        try:
            endpoint = mcp_endpoint(server, workspace=self.workspace, sight=sight)
            connection = McpConnection(dataclasses.replace(endpoint, layer=layer))
        except BaseException:
            if layer is not None:
                layer.remove()
            raise
        try:
            connection.open()
            listed = connection.list_tools()
            mcp_server_status_record(server=server)  # the listing may then note refused names
            mcp_definitions_record(
                server=server, definitions=[t.as_dict() for t in listed], actor=self.actor
            )
        except BaseException as exc:  # whatever failed, the server it started dies now
            connection.close()
            if layer is not None:
                layer.remove()
            if isinstance(exc, McpFailure):
                mcp_server_status_record(server=server, error=f"{exc.code}: {exc}")
            raise
        self._open[server.slug] = connection
        if layer is not None:
            self._layers[server.slug] = (layer, writes)
        return connection

    def call(
        self, tool: McpToolDefinition, arguments: Mapping[str, Any], *, pinned_hash: str = ""
    ) -> ToolResult:
        """Call an offered tool; a definition not (or no longer) approved, or not the one the
        caller's check was made against (``pinned_hash``), is refused before the call."""
        connection = self.connection(tool.server)  # a first start lists and pins it again
        tool.refresh_from_db()
        return self._checked_call(connection, tool, arguments, pinned_hash)

    def call_named(
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        pinned_hash: str = "",
        writes: Any = None,
        sight: WorkspaceSight | None = None,
    ) -> ToolResult:
        """``call`` by the server's slug and the tool's name (``writes``, ``sight``: see
        ``connection``)."""
        row = self._row(server, tool)
        if server not in self._open:  # starting it lists and pins it again: read it after
            self.connection(row.server, writes=writes, sight=sight)
            row = self._row(server, tool)
        return self._checked_call(self._open[server], row, arguments, pinned_hash)

    @staticmethod
    def _row(server: str, tool: str) -> McpToolDefinition:
        row = (
            McpToolDefinition.objects.select_related("server")
            .filter(server__slug=server, server__enabled=True, name=tool)
            .first()
        )
        if row is None:
            raise McpFailure(NOT_APPROVED, f"{mcp_tool_name(server, tool)} is not registered")
        return row

    @staticmethod
    def _checked_call(
        connection: McpConnection,
        tool: McpToolDefinition,
        arguments: Mapping[str, Any],
        pinned_hash: str,
    ) -> ToolResult:
        name = mcp_tool_name(tool.server.slug, tool.name)
        if not tool.offered:
            raise McpFailure(NOT_APPROVED, f"{name}: {tool.get_state_display()}")
        if pinned_hash and pinned_hash != tool.approved_hash:
            raise McpFailure(NOT_APPROVED, f"{name}: its approved definition changed")
        return connection.call_tool(tool.name, arguments)

    def close(self) -> dict[str, CommandWrites]:
        """Kill every server this job started; then apply what each wrote to its layer, as
        far as the write rule allows (by server: what was recorded and what discarded)."""
        for connection in self._open.values():
            connection.close()
        self._open.clear()
        applied = {}
        for slug, (layer, writes) in self._layers.items():
            try:  # every process of the server is dead by now: as a command's writes
                applied[slug] = command_writes(layer, writes.write_target(), sandboxed=True)
            finally:
                layer.remove()
        self._layers.clear()
        return applied
