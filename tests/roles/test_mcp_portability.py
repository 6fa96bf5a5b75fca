"""MCP servers and argument limits in the roles document: they travel (secrets by name),
approvals do not, and a malformed section is refused before anything is written."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from acode.errors import AcodeError
from roles.models import (
    McpArgumentLimit,
    McpServer,
    McpToolDefinition,
    McpToolState,
    Role,
    Tool,
)
from roles.portability.definitions import export_definitions, import_definitions
from roles.portability.document import dump_yaml, load_yaml
from roles.registry import registry
from roles.services import role_write
from roles.services.catalog import tool_save
from roles.services.mcp import (
    mcp_argument_limit_delete,
    mcp_argument_limit_save,
    mcp_definitions_record,
    mcp_server_delete,
    mcp_server_save,
    mcp_tool_approve,
)
from tests.factories import make_role

pytestmark = pytest.mark.django_db

SCHEMA = {"properties": {"project": {"enum": ["acode"]}}}


@pytest.fixture
def tracker() -> McpServer:
    server = mcp_server_save(
        server=McpServer(
            slug="tracker",
            command=["tracker-mcp"],
            env_secrets={"TRACKER_TOKEN": "ACODE_TRACKER_TOKEN"},
        ),
        actor="test",
    )
    (tool,) = mcp_definitions_record(server=server, definitions=[{"name": "issues"}])
    mcp_tool_approve(tool=tool, actor="alice")
    make_role("triager", permissions=["mcp-tracker"], allowed_tools=[])
    mcp_argument_limit_save(
        limit=McpArgumentLimit(
            role=Role.objects.get(slug="triager"), tool="mcp__tracker__issues", schema=SCHEMA
        ),
        actor="test",
    )
    return server


def _forget_mcp() -> None:
    """As another installation: no servers, no pinned definitions, no limits."""
    for server in McpServer.objects.all():
        mcp_server_delete(server=server, actor="test")
    for limit in McpArgumentLimit.objects.all():
        mcp_argument_limit_delete(limit=limit, actor="test")


def test_servers_and_limits_are_exported_by_secret_name(tracker: McpServer) -> None:
    document = export_definitions()

    assert document["mcp_servers"] == [
        {
            "slug": "tracker",
            "description": "",
            "transport": "stdio",
            "command": ["tracker-mcp"],
            "read_only_paths": [],
            "url": "",
            "env_secrets": {"TRACKER_TOKEN": "ACODE_TRACKER_TOKEN"},
            "header_secrets": {},
            "network": False,
            "call_timeout_seconds": 60,
            "max_output_chars": 65536,
            "enabled": True,
        }
    ]
    assert document["argument_limits"] == [
        {"role": "triager", "tool": "mcp__tracker__issues", "schema": SCHEMA}
    ]
    text = dump_yaml(document)
    assert "approved" not in text and "live_hash" not in text


def test_a_round_trip_brings_registrations_and_limits_but_no_approval(
    tracker: McpServer,
) -> None:
    text = dump_yaml(export_definitions())
    _forget_mcp()

    summary = import_definitions(load_yaml(text), actor="import")

    assert (summary.mcp_servers, summary.argument_limits) == (1, 1)
    server = McpServer.objects.get(slug="tracker")
    assert server.env_secrets == {"TRACKER_TOKEN": "ACODE_TRACKER_TOKEN"}
    assert McpArgumentLimit.objects.get().schema == SCHEMA
    assert not McpToolDefinition.objects.exists()  # listed and approved here, by an admin
    assert dump_yaml(export_definitions()) == text


def test_importing_over_existing_approvals_keeps_them(tracker: McpServer) -> None:
    document = export_definitions()
    document["mcp_servers"][0]["description"] = "Our issue tracker"

    import_definitions(document, actor="import")

    tool = McpToolDefinition.objects.get(name="issues")
    assert tool.state == McpToolState.APPROVED and tool.approved_by == "alice"
    assert McpServer.objects.get().description == "Our issue tracker"


def test_a_role_allow_listing_a_tool_of_an_imported_server_travels(
    tracker: McpServer,
) -> None:
    tool_save(tool=Tool(name="mcp__tracker__issues", description="Issues"), versioned=False)
    role_write(data={"allowed_tools": ["mcp__tracker__issues"]}, create=False, slug="triager")
    text = dump_yaml(export_definitions())
    Tool.objects.filter(name="mcp__tracker__issues").delete()
    _forget_mcp()

    import_definitions(load_yaml(text), actor="import")

    registry.sync()
    assert registry.get("triager").spec.allowed_tools == ("mcp__tracker__issues",)
    assert dump_yaml(export_definitions()) == text


def test_replace_removes_servers_and_limits_the_document_lacks(tracker: McpServer) -> None:
    document = {**export_definitions(), "mcp_servers": [], "argument_limits": []}
    document["permissions"] = [p for p in document["permissions"] if p["code"] != "mcp-tracker"]
    document["roles"] = [r for r in document["roles"] if r["slug"] != "triager"]

    summary = import_definitions(document, actor="import", replace=True)

    assert "mcp server tracker" in summary.removed
    assert not McpServer.objects.exists() and not McpArgumentLimit.objects.exists()


@pytest.mark.parametrize(
    "section",
    [
        {"mcp_servers": [{"slug": "x", "secret": "hunter2"}]},
        {"mcp_servers": [{"slug": "x", "env_secrets": {"TOKEN": "ghp_abc value"}}]},
        {"mcp_servers": [{"slug": "x", "command": "node server.js"}]},
        {"mcp_servers": [{"slug": "x", "call_timeout_seconds": 0}]},
        {"mcp_servers": [{"slug": "x", "transport": "carrier-pigeon"}]},
        {"mcp_servers": "tracker"},
        {"argument_limits": [{"role": "coder", "tool": "read_file"}]},
        {"argument_limits": [{"role": "coder", "tool": "read_file", "schema": []}]},
        {"argument_limits": [{"role": "coder", "tool": "read_file", "schema": {}}]},
    ],
)
def test_a_malformed_section_is_imp_001(section: dict[str, Any]) -> None:
    document = {**export_definitions(), **section}

    with pytest.raises(AcodeError) as refused:
        import_definitions(document, actor="import")

    assert refused.value.code == "ACODE-IMP-001"
    assert not McpServer.objects.exists() and not McpArgumentLimit.objects.exists()


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"mcp_servers": [{"slug": "x"}]}, "mcp server x: command"),
        ({"mcp_servers": [{"slug": "x", "transport": "http"}]}, "mcp server x: url"),
        (
            {"mcp_servers": [{"slug": "x", "url": "u", "transport": "http"}] * 2},
            "'x' appears twice",
        ),
        (
            {"argument_limits": [{"role": "nobody", "tool": "read_file", "schema": SCHEMA}]},
            "unknown role 'nobody'",
        ),
        (
            {"argument_limits": [{"role": "coder", "tool": "mcp__nowhere__x", "schema": SCHEMA}]},
            "neither a built-in tool nor a known server's tool",
        ),
        (
            {"argument_limits": [{"role": "coder", "tool": "read_file", "schema": {"type": 5}}]},
            "not a JSON Schema",
        ),
    ],
)
def test_sections_that_do_not_fit_are_imp_003(section: dict[str, Any], problem: str) -> None:
    document = {**export_definitions(), **section}

    with pytest.raises(AcodeError) as refused:
        import_definitions(document, actor="import")

    assert refused.value.code == "ACODE-IMP-003"
    assert any(problem in p for p in refused.value.details["problems"]), refused.value.details
    assert not McpServer.objects.exists() and not McpArgumentLimit.objects.exists()


def test_the_api_imports_servers_and_says_how_many(admin_user: Any, tracker: McpServer) -> None:
    client = APIClient()
    client.force_authenticate(admin_user)
    text = client.get("/api/roles/export/").content
    _forget_mcp()

    response = client.generic("POST", "/api/roles/import/", text, "application/yaml")

    assert response.status_code == 200, response.json()
    assert (response.json()["mcp_servers"], response.json()["argument_limits"]) == (1, 1)
    assert client.get("/api/mcp-servers/tracker/").json()["tools"] == []
