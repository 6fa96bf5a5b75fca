"""MCP servers and argument limits travel with the roles document; approvals do not."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from roles.models import McpArgumentLimit, McpServer, McpToolDefinition, Role, RoleVersion
from roles.portability.definitions import export_definitions, import_definitions
from roles.services.mcp import (
    mcp_argument_limit_save,
    mcp_definitions_record,
    mcp_server_save,
    mcp_tool_approve,
)

pytestmark = pytest.mark.django_db

LIMIT = {"properties": {"project": {"enum": ["acode"]}}}
LISTED = {"name": "issues", "description": "List issues", "input_schema": {"type": "object"}}


@pytest.fixture
def boss(admin_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def _registered() -> McpServer:
    server = mcp_server_save(
        server=McpServer(
            slug="tracker", command=["tracker-mcp"], env_secrets={"TOKEN": "TRACKER_TOKEN"}
        ),
        actor="test",
    )
    mcp_argument_limit_save(
        limit=McpArgumentLimit(role=Role.objects.get(slug="coder"), tool="mcp__tracker__issues",
                               schema=LIMIT),
        actor="test",
    )  # fmt: skip
    mcp_definitions_record(server=server, definitions=[LISTED])
    mcp_tool_approve(tool=McpToolDefinition.objects.get(name="issues"), actor="test")
    return server


def test_round_trip_keeps_servers_and_limits_by_name_but_not_approvals(
    boss: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACKER_TOKEN", "s3cret-value")
    _registered()
    text = boss.get("/api/roles/export/").content.decode()
    assert "TRACKER_TOKEN" in text and "s3cret-value" not in text
    document = yaml.safe_load(text)
    assert document["mcp_servers"][0]["env_secrets"] == {"TOKEN": "TRACKER_TOKEN"}
    assert document["argument_limits"] == [
        {"role": "coder", "tool": "mcp__tracker__issues", "schema": LIMIT}
    ]
    McpServer.objects.all().delete()
    McpArgumentLimit.objects.all().delete()
    response = boss.generic("POST", "/api/roles/import/", text, content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert response.json()["mcp_servers"] == 1 and response.json()["argument_limits"] == 1
    assert boss.get("/api/roles/export/").content.decode() == text
    # Approvals stay on the installation they were made on: listed here, the tool waits.
    server = McpServer.objects.get(slug="tracker")
    (tool,) = mcp_definitions_record(server=server, definitions=[LISTED])
    assert tool.state == "pending" and not tool.offered
    latest = RoleVersion.objects.filter(role_slug="coder").order_by("-number").first()
    assert latest is not None
    assert [lim["tool"] for lim in latest.snapshot["argument_limits"]] == ["mcp__tracker__issues"]


def test_replace_removes_servers_and_limits_only_when_the_document_has_the_section() -> None:
    _registered()
    document = export_definitions()
    older = {k: v for k, v in document.items() if k not in ("mcp_servers", "argument_limits")}
    import_definitions(older, actor="test", replace=True)
    assert McpServer.objects.exists() and McpArgumentLimit.objects.exists()
    summary = import_definitions(
        {**older, "mcp_servers": [], "argument_limits": []}, actor="test", replace=True
    )
    assert "mcp server tracker" in summary.removed
    assert "argument limit coder mcp__tracker__issues" in summary.removed
    assert not McpServer.objects.exists() and not McpArgumentLimit.objects.exists()


@pytest.mark.parametrize(
    ("section", "entry", "code"),
    [
        ("mcp_servers", {"slug": "x", "command": "not-a-list"}, "ACODE-IMP-001"),
        ("mcp_servers", {"slug": "x", "env_secrets": {"TOKEN": "has a space"}}, "ACODE-IMP-001"),
        ("mcp_servers", {"slug": "x", "secret_value": "nope"}, "ACODE-IMP-001"),
        ("mcp_servers", {"slug": "x", "transport": "http"}, "ACODE-IMP-003"),  # no URL
        ("argument_limits", {"role": "coder", "tool": "t"}, "ACODE-IMP-001"),
        ("argument_limits", {"role": "coder", "tool": "t", "schema": []}, "ACODE-IMP-001"),
        ("argument_limits", {"role": "coder", "tool": "t", "schema": {}}, "ACODE-IMP-001"),
        (
            "argument_limits",
            {"role": "nobody", "tool": "t", "schema": {"type": "object"}},
            "ACODE-IMP-003",
        ),
        ("argument_limits", {"role": "coder", "tool": "t", "schema": {"type": 5}}, "ACODE-IMP-003"),
    ],
)
def test_malformed_mcp_sections_are_refused_and_nothing_is_written(
    boss: APIClient, section: str, entry: dict[str, Any], code: str
) -> None:
    document = {**export_definitions(), section: [entry]}
    text = yaml.safe_dump(document)
    response = boss.generic("POST", "/api/roles/import/", text, content_type="application/yaml")
    status = 400 if code == "ACODE-IMP-001" else 409
    assert (response.status_code, response.json()["code"]) == (status, code), response.json()
    assert not McpServer.objects.exists() and not McpArgumentLimit.objects.exists()
