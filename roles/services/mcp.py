"""Writes to MCP server registrations and their pinned tool definitions (issue 24).

A definition (name, description, input schema, annotations: everything that reaches the
model) is pinned by its sha256 over canonical JSON. Each listing of a server is recorded
here: a new tool waits for approval; an approved tool whose definition moved is disabled
until an admin approves the new one; the change and every approval are audited.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from acode.errors import AcodeError
from roles.decision.schemas import schema_problem
from roles.mcp.models import (
    OWN_SETTINGS,
    McpArgumentLimit,
    McpServer,
    McpServerStatus,
    McpToolDefinition,
    McpToolState,
    own_setting,
)
from roles.mcp.tools import listing_refusals, mcp_tool_name, server_permission
from roles.models import ModelEndpoint, Permission
from roles.services.common import actor_label, data_changed, role_versions_record
from roles.services.examples import role_examples_enforce
from roles.services.protection import protected_roles_guard, reviewed_write

NAMES_REFUSED = "ACODE-MCP-010"


def definition_hash(definition: Mapping[str, Any]) -> str:
    """sha256 over canonical JSON (sorted keys, no spaces, UTF-8): key order never matters."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def definition_diff(tool: McpToolDefinition) -> str:
    """A unified diff from the approved definition to the one the server lists now."""
    before = json.dumps(tool.approved_definition or {}, indent=2, sort_keys=True).splitlines()
    after = json.dumps(tool.live_definition, indent=2, sort_keys=True).splitlines()
    return "\n".join(
        difflib.unified_diff(before, after, "approved", "listed now", lineterm="", n=3)
    )


def _tool_label(tool: McpToolDefinition) -> str:
    return mcp_tool_name(tool.server.slug, tool.name)


@transaction.atomic
def mcp_definitions_record(
    *, server: McpServer, definitions: Iterable[Mapping[str, Any]], actor: str = "system"
) -> list[McpToolDefinition]:
    """Record what ``server`` lists now; returns its tools, each in its new state.

    New: pending. Approved but different now: changed (disabled, audited). Listed again
    exactly as approved: approved. No longer listed: missing.
    """
    now = timezone.now()
    existing = {
        t.name: t for t in McpToolDefinition.objects.select_for_update().filter(server=server)
    }
    listed = [_definition(raw) for raw in definitions]
    refused = listing_refusals(server.slug, [str(d["name"]) for d in listed])
    seen: list[McpToolDefinition] = []
    for definition in listed:
        if str(definition["name"]) in refused:
            continue  # not offered, and no longer offered if it was (left missing below)
        digest = definition_hash(definition)
        name = str(definition["name"])
        tool = existing.pop(name, None)
        if tool is None:
            tool = McpToolDefinition(server=server, name=name)
            _set_live(tool, definition, digest, now, McpToolState.PENDING)
            tool.save()
            data_changed("mcp tool", "listed", _tool_label(tool), actor, {"hash": digest})
        else:
            before = tool.state
            state = _state_after_listing(tool, digest)
            moved = digest != tool.live_hash
            _set_live(tool, definition, digest, now, state)
            tool.save()
            if moved or state != before:
                data_changed(
                    "mcp tool", f"definition {state}", _tool_label(tool), actor,
                    {"hash": digest, "approved_hash": tool.approved_hash, "was": before},
                )  # fmt: skip
        seen.append(tool)
    for tool in existing.values():
        if tool.state != McpToolState.MISSING:
            tool.state = McpToolState.MISSING
            tool.save(update_fields=["state"])
            data_changed("mcp tool", "definition missing", _tool_label(tool), actor)
    if refused:
        reasons = "; ".join(sorted(set(refused.values())))
        mcp_server_status_record(server=server, error=f"{NAMES_REFUSED}: not offered: {reasons}")
        data_changed("mcp tool", "names refused", server.slug, actor, {"refused": refused})
    # A tool withheld or offered again moves roles' tools. Offered again is a definition an
    # admin approved, so a protected role may get it back (roles.services.protection).
    with reviewed_write():
        role_versions_record(actor=actor)
    return seen


def _definition(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The four parts of a definition, absent ones empty, so two listings compare equal."""
    return {
        "name": str(raw.get("name") or ""),
        "description": str(raw.get("description") or ""),
        "input_schema": dict(raw.get("input_schema") or {}),
        "annotations": dict(raw.get("annotations") or {}),
    }


def _state_after_listing(tool: McpToolDefinition, digest: str) -> str:
    if tool.approved_hash and digest == tool.approved_hash:
        return McpToolState.APPROVED
    if tool.approved_hash:
        return McpToolState.CHANGED
    return McpToolState.PENDING


def _set_live(
    tool: McpToolDefinition, definition: dict[str, Any], digest: str, now: Any, state: str
) -> None:
    tool.live_definition = definition
    tool.live_hash = digest
    tool.seen_at = now
    tool.state = state


@transaction.atomic
def mcp_tool_approve(
    *,
    tool: McpToolDefinition,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    expected_hash: str = "",
) -> McpToolDefinition:
    """Approve the definition the server lists now: the tool is offered while it stays so.

    ``expected_hash``: the hash of the definition the approver read; if a listing since
    then changed it, nothing is approved (ACODE-API-409), so no description that reaches
    the model is approved unread."""
    tool = McpToolDefinition.objects.select_for_update().select_related("server").get(pk=tool.pk)
    if expected_hash and expected_hash != tool.live_hash:
        raise AcodeError(
            "ACODE-API-409",
            f"{_tool_label(tool)}: the server lists another definition than the one you read; "
            "read it again (and its diff) before approving.",
            {"tool": _tool_label(tool), "hash": tool.live_hash, "expected_hash": expected_hash},
        )
    if tool.state == McpToolState.MISSING:
        return tool  # nothing listed to approve
    who = actor_label(actor, user)
    previous = tool.approved_hash
    tool.approved_definition = tool.live_definition
    tool.approved_hash = tool.live_hash
    tool.approved_by = who
    tool.approved_at = timezone.now()
    tool.state = McpToolState.APPROVED
    tool.save()
    data_changed(
        "mcp tool", "approved", _tool_label(tool), who,
        {"hash": tool.approved_hash, "previous_hash": previous},
    )  # fmt: skip
    role_versions_record(actor=who)  # roles holding the server's permission gained a tool
    return tool


def acode_secret_names() -> set[str]:
    """Variables holding acode's own secrets, which no server may be given: its settings
    (``ACODE_*``, ``DATABASE_URL``...) and every model endpoint's key."""
    names = {n for n in os.environ if own_setting(n)} | set(OWN_SETTINGS)
    names.add(str(settings.ACODE_LLM_API_KEY_ENV))
    names.update(
        ModelEndpoint.objects.exclude(api_key_env="").values_list("api_key_env", flat=True)
    )
    return names


@transaction.atomic
def mcp_server_save(
    *, server: McpServer, actor: str | None = None, user: AbstractBaseUser | None = None
) -> McpServer:
    """Save a registration (its secrets are names of acode's variables, never values, and
    never one of acode's own)."""
    with protected_roles_guard():  # its address and grants are what its tools reach
        _server_write(server, actor_label(actor, user))
        role_versions_record(actor=actor, user=user)  # switched on or off: roles' tools moved
    return server


def _server_write(server: McpServer, who: str) -> None:
    """Check and save a registration, and the permission that grants its tools."""
    server.full_clean()
    taken = sorted(
        name
        for name in {**server.env_secrets, **server.header_secrets}.values()
        if name in acode_secret_names() or own_setting(name)
    )
    if taken:
        field = "env_secrets" if server.transport == "stdio" else "header_secrets"
        raise ValidationError(
            {field: f"{', '.join(taken)}: acode's own secrets are never given to a server."}
        )
    server.save()
    # The permission that grants its tools exists as soon as the server does.
    Permission.objects.get_or_create(
        code=server_permission(server.slug),
        defaults={"description": f"Use the tools of MCP server {server.slug}"},
    )
    data_changed("mcp server", "saved", server.slug, who)


@transaction.atomic
def mcp_server_delete(
    *, server: McpServer, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """Delete a registration and its pinned definitions."""
    slug = server.slug
    server.delete()
    data_changed("mcp server", "deleted", slug, actor_label(actor, user))
    role_versions_record(actor=actor, user=user)  # roles holding its permission lost its tools


def mcp_server_status_record(*, server: McpServer, error: str = "") -> None:
    """What the last attempt to reach the server gave: ok, or the error (admin shows it).
    Callers record it before the listing, which may then record refused tool names."""
    McpServer.objects.filter(pk=server.pk).update(
        status=McpServerStatus.ERROR if error else McpServerStatus.OK,
        last_error=error[:4000],
        checked_at=timezone.now(),
    )


@transaction.atomic
def mcp_argument_limit_save(
    *, limit: McpArgumentLimit, actor: str | None = None, user: AbstractBaseUser | None = None
) -> McpArgumentLimit:
    """Save a role's narrowing of a tool's arguments (a JSON Schema the decision can run:
    ``roles.decision.schemas.schema_problem``); the role and the roles below it get a new
    version, which records the limit."""
    limit.full_clean()
    problem = schema_problem(limit.schema)
    if problem:
        raise ValidationError({"schema": problem})
    limit.save()
    data_changed(
        "argument limit", "saved", f"{limit.role.slug} {limit.tool}", actor_label(actor, user),
        {"schema": limit.schema},
    )  # fmt: skip
    role_examples_enforce(saved={limit.role.slug})  # ACODE-ROL-008: nothing is kept
    role_versions_record(actor=actor, user=user)
    return limit


@transaction.atomic
def mcp_argument_limit_delete(
    *, limit: McpArgumentLimit, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """Delete a role's narrowing of a tool's arguments."""
    name = f"{limit.role.slug} {limit.tool}"
    limit.delete()
    data_changed("argument limit", "deleted", name, actor_label(actor, user))
    role_examples_enforce(saved={limit.role.slug})
    role_versions_record(actor=actor, user=user)
