from __future__ import annotations

import json

import pytest

from roles.models import EndpointKind, ModelEndpoint
from tests.cli.conftest import RunCli
from tests.fake_openai import fake_openai

pytestmark = pytest.mark.django_db(transaction=True)


def test_model_check_says_whether_the_model_can_call_tools(admin_cli: RunCli) -> None:
    read = json.dumps({"action": "call_tool", "tool": "read_file", "arguments": {"path": "a"}})
    with fake_openai([read, "Let me think."], models=[{"id": "m", "max_model_len": 4096}]) as s:
        for name, constrained in (("local", True), ("plain", False)):
            ModelEndpoint.objects.create(
                name=name,
                kind=EndpointKind.OPENAI,
                base_url=s.base_url,
                model="m",
                supports_json_schema=constrained,
            )
        good = admin_cli("model", "check", "local")
        bad = admin_cli("model", "check", "plain")
        listed = admin_cli("model", "list")
    assert good.exit_code == 0, good.output
    assert "Model endpoint local (m): can call tools" in good.stdout
    assert "Context window: 4096 (reported by the server)" in good.stdout
    assert bad.exit_code == 1 and "cannot call tools" in bad.stdout
    assert "answered in text" in bad.stdout
    assert "default" in listed.stdout and "local" in listed.stdout


def test_model_check_of_an_unknown_endpoint_prints_the_code(admin_cli: RunCli) -> None:
    result = admin_cli("model", "check", "nope")
    assert result.exit_code != 0
    assert "ACODE-API-404" in result.output
