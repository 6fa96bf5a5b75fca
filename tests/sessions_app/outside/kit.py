"""What the outside agents' tests share: a coder role with limits, a hook token, events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rest_framework.test import APIClient

from roles.registry import registry
from roles.services import role_write
from sessions_app.services.outside.tokens import hook_token_create

RULES = [
    {"program": "ls", "args": "paths"},
    {"program": "cat", "args": "paths"},
    {"program": "echo", "args": "text"},
    {"program": "touch", "args": "paths", "outcome": "ask"},
]


def limited_coder() -> None:
    """The Coder writes under src/ only and runs ls, cat, echo (and touch once asked)."""
    role_write(data={"write_paths": ["src/**"], "command_patterns": RULES}, create=False,
               slug="coder", actor="test")  # fmt: skip
    registry.sync()


def hook_client(user: Any, role: str = "coder") -> tuple[APIClient, str]:
    _, key = hook_token_create(user=user, label="laptop", role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client, key


def pre(
    root: Path, tool: str, tool_input: Any, *, sid: str = "s-1", **extra: Any
) -> dict[str, Any]:
    """A PreToolUse event as Claude Code 2.1.332 sends it."""
    return {
        "session_id": sid, "transcript_path": f"/tmp/{sid}.jsonl", "cwd": str(root),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_use_id": "toolu_01", **extra,
    }  # fmt: skip


def decision(response: Any) -> tuple[str, str]:
    out = response.json()["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"]


ECHO_SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "Message to echo"}},
    "required": ["message"],
}


def mcp_echo_limited(role: str = "coder", server: str = "everything") -> None:
    """The reference server's ``echo``, approved for ``role``, its message at most 10
    characters (the role's argument limit)."""
    from roles.models import McpArgumentLimit, McpServer, McpToolDefinition, Permission, Role
    from roles.services import role_saved
    from roles.services.mcp import (
        mcp_argument_limit_save,
        mcp_definitions_record,
        mcp_server_save,
        mcp_tool_approve,
    )

    mcp = McpServer(slug=server, transport="stdio", command=["npx", server])
    mcp_server_save(server=mcp, actor="test")
    definition = {
        "name": "echo",
        "description": "Echoes back the input",
        "input_schema": ECHO_SCHEMA,
    }
    mcp_definitions_record(server=mcp, definitions=[definition])
    mcp_tool_approve(tool=McpToolDefinition.objects.get(server=mcp, name="echo"))
    owner = Role.objects.get(slug=role)
    owner.permissions.add(Permission.objects.get(code=f"mcp-{server}"))
    role_saved(role=owner, actor="test")
    limit = McpArgumentLimit(role=owner, tool=f"mcp__{server}__echo",
                             schema={"properties": {"message": {"maxLength": 10}}})  # fmt: skip
    mcp_argument_limit_save(limit=limit, actor="test")
    registry.sync()
