"""``acode model show|set``, ``model add --url --context-size`` and ``roles set-model``."""

from __future__ import annotations

import json

import pytest

from roles.models import ModelEndpoint, Role
from sessions_app.models import AuditEvent
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)


def test_add_an_endpoint_with_url_and_context_size_then_give_a_role_it(admin_cli: RunCli) -> None:
    added = admin_cli(
        "model", "add", "mistral-70b", "--url", "http://127.0.0.1:9/v1",
        "--model", "mistral:70b-instruct", "--context-size", "16384",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    row = ModelEndpoint.objects.get(name="mistral-70b")
    assert (row.base_url, row.model, row.context_window) == (
        "http://127.0.0.1:9/v1", "mistral:70b-instruct", 16384,
    )  # fmt: skip

    given = admin_cli("roles", "set-model", "Planner", "mistral-70b")
    assert given.exit_code == 0, given.output
    assert "Role Planner now uses mistral-70b as its preferred model." in given.stdout
    assert Role.objects.get(slug="planner").preferred_model == "mistral-70b"
    assert AuditEvent.objects.filter(event_type="RoleEdited", role="planner", actor="boss").exists()

    shown = admin_cli("model", "show")
    assert shown.exit_code == 0, shown.output
    line = next(row for row in shown.stdout.splitlines() if "mistral-70b" in row)
    assert "mistral:70b-instruct" in line and "16384" in line and "Planner" in line
    assert "  Planner: mistral-70b (context size 16384)" in shown.stdout
    assert "  Coder: default (context size" in shown.stdout


def test_model_set_sizes_the_endpoint_a_role_uses(admin_cli: RunCli) -> None:
    admin_cli("model", "add", "big", "--url", "http://127.0.0.1:9/v1", "--model", "m")
    assert admin_cli("model", "set", "planner", "big").exit_code == 0
    sized = admin_cli("model", "set", "Planner", "--context-size", "32768")
    assert sized.exit_code == 0, sized.output
    assert "Model endpoint big: context size 32768 tokens." in sized.stdout
    assert ModelEndpoint.objects.get(name="big").context_window == 32768
    direct = admin_cli("model", "set", "big", "--context-size", "4096", "--json")
    assert json.loads(direct.stdout)["context_window"] == 4096
    listed = json.loads(admin_cli("model", "show", "--json").stdout)
    big = next(row for row in listed if row["name"] == "big")
    assert big["used_by"] == [{"role": "Planner", "use": "preferred"}]


def test_model_set_refuses_the_settings_endpoint_and_unknown_names(admin_cli: RunCli) -> None:
    settings_one = admin_cli("model", "set", "coder", "--context-size", "32768")
    assert settings_one.exit_code != 0
    assert "ACODE_LLM_CONTEXT_WINDOW" in settings_one.stderr
    unknown = admin_cli("model", "set", "wizard", "--context-size", "1024")
    assert unknown.exit_code != 0 and "neither a role nor a model endpoint" in unknown.stderr
    bare = admin_cli("model", "set", "coder")
    assert bare.exit_code != 0 and "--context-size" in bare.stderr


def test_a_user_without_role_rights_cannot_give_a_role_a_model(cli: RunCli) -> None:
    refused = cli("roles", "set-model", "Planner", "default")
    assert refused.exit_code != 0 and "ACODE-API-403" in refused.stderr
    assert Role.objects.get(slug="planner").preferred_model == ""
