"""Policy examples: calls a role must allow or deny, checked with the executor's own decision
on every save (admin, API, import) and on demand (acode_policy_test, POST /api/roles/test/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from acode.errors import AcodeError
from roles.access import ToolSpec, compute_access
from roles.decision import RoleView, decide, role_examples_run
from roles.decision.facts import HostFacts
from roles.models import Permission, Role, RoleVersion
from roles.portability.definitions import export_definitions, import_definitions
from roles.portability.document import dump_yaml
from roles.registry import registry
from roles.services import role_write
from roles.tools import declared_tools
from roles.validation import role_spec
from tests.roles.test_registry import _role_form_data

pytestmark = pytest.mark.django_db

READS_README = {
    "name": "reads the readme",
    "tool": "read_file",
    "arguments": {"path": "README.md"},
    "expect": "deny",
    "why": "a wrong example: the Planner reads files",
}


def _planner_examples() -> list[Any]:
    return list(Role.objects.get(slug="planner").examples)


# -- the seeded roles ---------------------------------------------------------------------
def test_the_seeded_examples_pass_and_cover_the_promises() -> None:
    out = _policy_test()
    assert out.endswith("all pass"), out
    for promise in (
        "planner examples[0] (the Planner cannot write)",
        "tester command_patterns[1].examples[1] (the Tester runs only test commands)",
        "coder examples[0] (the Coder never writes git metadata)",
    ):
        assert promise in out


# -- a save refused: API, admin, import ---------------------------------------------------
def test_an_api_save_with_a_failing_example_is_refused_naming_the_rule(
    boss_api: APIClient,
) -> None:
    versions = RoleVersion.objects.count()
    response = boss_api.patch(
        "/api/roles/planner/", {"examples": [*_planner_examples(), READS_README]}, format="json"
    )
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "ACODE-ROL-008"
    assert "role planner, examples[3] (reads the readme)" in body["message"]
    assert "must be denied (a wrong example: the Planner reads files)" in body["message"]
    assert "is allowed by rule 'permission: read_files'" in body["message"]
    assert len(_planner_examples()) == 3 and RoleVersion.objects.count() == versions


def test_widening_a_role_against_its_own_examples_is_refused(boss_api: APIClient) -> None:
    response = boss_api.patch(
        "/api/roles/planner/",
        {"permissions": ["read_files", "write_files"], "allowed_tools": []},
        format="json",
    )
    assert response.status_code == 409
    assert "(the Planner cannot write)" in response.json()["message"]
    assert "allowed by rule 'write_paths: anywhere'" in response.json()["message"]
    assert sorted(registry.get("planner").access.permissions) == ["read_files"]


def test_a_child_never_exceeds_its_parent_and_an_example_says_so() -> None:
    child = {
        "slug": "scribe",
        "name": "Scribe",
        "parent": "planner",
        "permissions": ["read_files", "write_files"],
        "examples": [
            {"tool": "write_file", "arguments": {"path": "a.md", "content": "x"},
             "expect": "allow", "why": "a wrong example: the Planner cannot write"},
        ],
    }  # fmt: skip
    with pytest.raises(AcodeError) as refused:
        role_write(data=child, create=True, actor="test")
    assert refused.value.code == "ACODE-ROL-008"
    assert "denied by rule 'effective_tools'" in refused.value.message
    assert "not held by parent role planner" in refused.value.message
    assert not Role.objects.filter(slug="scribe").exists()
    child["examples"][0]["expect"] = "deny"  # type: ignore[index]
    role_write(data=child, create=True, actor="test")
    # A parent's edit is checked against its children's examples too.
    with pytest.raises(AcodeError, match=r"role scribe, examples\[0\]"):
        role_write(data={"permissions": ["read_files", "write_files"], "allowed_tools": [], "examples": []},
                   create=False, slug="planner", actor="test")  # fmt: skip


def test_an_admin_save_with_a_failing_example_is_a_form_error(admin_client_logged_in: Any) -> None:
    planner = Role.objects.get(slug="planner")
    form = _role_form_data(planner)
    form["permissions"] = [
        str(p.pk) for p in Permission.objects.filter(code__in=["read_files", "write_files"])
    ]
    form["allowed_tools"] = []
    response = admin_client_logged_in.post(f"/admin/roles/role/{planner.pk}/change/", form)
    assert response.status_code == 200
    text = response.content.decode()
    assert "ACODE-ROL-008" in text and "write_paths: anywhere" in text
    assert "the Planner cannot write" in text
    assert sorted(registry.get("planner").access.permissions) == ["read_files"]


def test_the_admin_shows_and_saves_examples(admin_client_logged_in: Any) -> None:
    planner = Role.objects.get(slug="planner")
    page = admin_client_logged_in.get(f"/admin/roles/role/{planner.pk}/change/").content.decode()
    assert "the Planner cannot write" in page
    form = _role_form_data(planner)
    fine = {**READS_README, "expect": "allow", "why": "the Planner reads"}
    form["examples"] = json.dumps([*planner.examples, fine])
    response = admin_client_logged_in.post(f"/admin/roles/role/{planner.pk}/change/", form)
    assert response.status_code == 302
    assert _planner_examples()[-1]["why"] == "the Planner reads"


def test_an_import_with_a_failing_example_writes_nothing(boss_api: APIClient) -> None:
    document = export_definitions()
    planner = next(r for r in document["roles"] if r["slug"] == "planner")
    planner["examples"] = [*planner["examples"], READS_README]
    planner["description"] = "changed"
    with pytest.raises(AcodeError) as refused:
        import_definitions(document, actor="test")
    assert refused.value.code == "ACODE-ROL-008"
    assert "is allowed by rule 'permission: read_files'" in refused.value.message
    response = boss_api.post(
        "/api/roles/import/", dump_yaml(document), content_type="application/yaml"
    )
    assert response.status_code == 409 and response.json()["code"] == "ACODE-ROL-008"
    assert Role.objects.get(slug="planner").description != "changed"


def test_examples_round_trip_through_export_and_import() -> None:
    document = export_definitions()
    tester = next(r for r in document["roles"] if r["slug"] == "tester")
    assert tester["command_patterns"][1]["examples"][0]["argv"][:3] == ["python", "-m", "pytest"]
    import_definitions(document, actor="test")
    assert export_definitions() == document


def test_a_malformed_example_is_an_invalid_role(boss_api: APIClient) -> None:
    bad = {"tool": "read_file", "expect": "maybe", "why": "x"}
    response = boss_api.patch("/api/roles/planner/", {"examples": [bad]}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] in ("ACODE-ROL-004", "ACODE-API-400")
    rule = {"program": "pytest", "examples": [{"argv": [], "expect": "allow", "why": "x"}]}
    with pytest.raises(AcodeError) as refused:
        role_write(data={"command_patterns": [rule]}, create=False, slug="tester", actor="t")
    assert refused.value.code == "ACODE-ROL-004"


# -- on demand ----------------------------------------------------------------------------
def _policy_test(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("acode_policy_test", *args, stdout=out)
    return out.getvalue().strip()


def test_acode_policy_test_on_a_file_with_a_failing_example_exits_non_zero(
    tmp_path: Path,
) -> None:
    document = export_definitions()
    good = tmp_path / "roles.yaml"
    good.write_text(dump_yaml(document), encoding="utf-8")
    assert _policy_test(str(good)).endswith("all pass")
    planner = next(r for r in document["roles"] if r["slug"] == "planner")
    planner["permissions"], planner["allowed_tools"] = ["read_files", "write_files"], []
    bad = tmp_path / "bad.yaml"
    bad.write_text(dump_yaml(document), encoding="utf-8")
    with pytest.raises(CommandError) as failed:
        _policy_test(str(bad))
    assert failed.value.returncode == 1
    assert "policy example(s) failed" in str(failed.value)
    # Nothing was written: the stored Planner still cannot write.
    assert sorted(registry.get("planner").access.permissions) == ["read_files"]


def test_the_api_runs_the_examples_of_a_document_or_the_stored_roles(api: APIClient) -> None:
    stored = api.get("/api/roles/test/").json()
    assert stored["passed"] is True and stored["examples"] >= 10
    document = export_definitions()
    next(r for r in document["roles"] if r["slug"] == "planner")["examples"].append(READS_README)
    response = api.post("/api/roles/test/", dump_yaml(document), content_type="application/yaml")
    report = response.json()
    assert response.status_code == 200 and report["passed"] is False and report["failed"] == 1
    failed = next(r for r in report["results"] if not r["passed"])
    assert (failed["role"], failed["decision"], failed["rule"]) == (
        "planner", "allow", "permission: read_files"
    )  # fmt: skip


# -- the decision the examples use --------------------------------------------------------
def _tester() -> RoleView:
    specs = {s.slug: s for s in (role_spec(r) for r in export_definitions()["roles"])}
    tools = [ToolSpec(t, t.description, True) for t in declared_tools().values()]
    return RoleView(specs["tester"], compute_access("tester", specs, tools))


def test_an_example_states_the_host_and_workspace_it_needs() -> None:
    tester = _tester()
    run = {"tool": "execute_command", "arguments": {"argv": ["pytest", "tests/x.py"]}}
    no_sandbox = {**run, "expect": "deny", "why": "no sandbox", "rule": "sandbox",
                  "context": {"sandbox": "unavailable"}}  # fmt: skip
    through_link = {**run, "expect": "deny", "why": "a link", "context": {"links": ["tests"]}}
    sandbox_off = {**run, "expect": "allow", "why": "off", "context": {"sandbox": "off"}}
    view = RoleView(
        tester.spec.__class__(**{**tester.spec.__dict__,
                                 "examples": (no_sandbox, through_link, sandbox_off)}),
        tester.access,
    )  # fmt: skip
    results = role_examples_run(view)
    assert [r.passed for r in results[:3]] == [True, True, True], [r.message() for r in results]
    assert results[0].decision.code == "ACODE-TOL-003"
    assert "goes through a symbolic link" in results[1].decision.reason


def test_the_decision_reads_no_database_and_matches_the_executor(
    tmp_path: Path, django_assert_num_queries: Any
) -> None:
    from sessions_app.agent.executor import tool_check

    registry.sync()
    coder = registry.get("coder")
    call = ("write_file", {"path": "src/a.py", "content": "x"})
    with django_assert_num_queries(0):
        pure = decide(coder, *call, host=HostFacts(), workspace=_no_links())
    live = tool_check(coder, *call, tmp_path)
    assert (pure.allowed, pure.rule, pure.normalised) == (live.allowed, live.rule, live.normalised)


def _no_links() -> Any:
    from roles.commands.workspace import KnownWorkspace

    return KnownWorkspace.of()
