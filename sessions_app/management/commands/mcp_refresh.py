"""List MCP servers' tools now and pin their definitions (a new server's tools then wait
for approval in admin; a changed definition is disabled until approved again)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from roles.models import McpServer
from sessions_app.agent.mcp.servers import mcp_server_refresh
from sessions_app.containment import McpFailure


class Command(BaseCommand):
    help = "List MCP servers' tools and pin their definitions (all enabled servers, or SLUGs)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slugs", nargs="*")

    def handle(self, *args: Any, **options: Any) -> None:
        servers = McpServer.objects.filter(enabled=True)
        if options["slugs"]:
            servers = McpServer.objects.filter(slug__in=options["slugs"])
        failed = []
        for server in servers:
            try:
                tools = mcp_server_refresh(server=server, actor="manage.py mcp_refresh")
            except McpFailure as failure:
                failed.append(server.slug)
                self.stderr.write(f"{server.slug}: {failure.code} {failure}")
                continue
            for tool in tools:
                self.stdout.write(f"{server.slug}: {tool.name} ({tool.get_state_display()})")
        if failed:
            raise CommandError(f"could not list: {', '.join(failed)}")
