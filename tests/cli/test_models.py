from __future__ import annotations

import json
from pathlib import Path

import pytest

from roles.models import EndpointKind, ModelEndpoint
from roles.registry import registry
from tests.cli.conftest import RunCli
from tests.fake_openai import fake_openai

pytestmark = pytest.mark.django_db(transaction=True)


def test_model_check_says_whether_the_model_can_call_tools(admin_cli: RunCli) -> None:
    read = json.dumps({"action": "call_tool", "tool": "read_file", "arguments": {"path": "a"}})
    # Three probes each (the default): the first check gets three tool calls, the second
    # (the fake answers its last answer from then on) three texts.
    answers = [read, read, read, "Let me think."]
    with fake_openai(answers, models=[{"id": "m", "max_model_len": 4096}]) as s:
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
    assert "3 of 3 probes called a tool" in good.stdout
    assert bad.exit_code == 1 and "cannot call tools" in bad.stdout
    assert "answered in text" in bad.stdout
    assert "default" in listed.stdout and "local" in listed.stdout


def test_model_check_of_an_unknown_endpoint_prints_the_code(admin_cli: RunCli) -> None:
    result = admin_cli("model", "check", "nope")
    assert result.exit_code != 0
    assert "ACODE-API-404" in result.output


def test_the_cli_adds_a_scripted_endpoint_and_gives_a_role_it(
    admin_cli: RunCli, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    call = {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]}
    script.write_text(json.dumps([call]))
    added = admin_cli("model", "add", "demo-reader", "--script", str(script))
    assert added.exit_code == 0, added.output
    assert "Model endpoint demo-reader: scripted (replays a script)." in added.stdout
    row = ModelEndpoint.objects.get(name="demo-reader")
    assert (row.kind, row.model, row.script) == ("scripted", "", [call])
    checked = admin_cli("model", "check", "demo-reader")
    assert checked.exit_code == 0 and "3 of 3 probes called a tool" in checked.stdout
    used = admin_cli("model", "use", "demo-reader", "--role", "explorer")
    assert used.exit_code == 0, used.output
    assert "now uses demo-reader as its preferred model" in used.stdout
    assert registry.get("explorer").spec.preferred_model == "demo-reader"
    listed = admin_cli("model", "list")
    assert "scripted (replays a script)" in listed.stdout


def test_the_cli_refuses_what_a_kind_lacks_and_a_model_that_does_not_exist(
    admin_cli: RunCli, tmp_path: Path
) -> None:
    no_model = admin_cli("model", "add", "remote", "--base-url", "http://127.0.0.1:9/v1")
    assert no_model.exit_code != 0 and "ACODE-LLM-004" in no_model.output
    assert "needs the model name" in no_model.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"say": "hi"}]))
    refused = admin_cli("model", "add", "odd", "--script", str(bad))
    assert refused.exit_code != 0 and "unknown key 'say'" in refused.output
    missing = admin_cli("model", "use", "no-such-endpoint", "--role", "explorer")
    assert missing.exit_code != 0 and "names no model endpoint" in missing.output
    assert "acode model add" in missing.output
