"""Workflow templates and risk signals as YAML: export, import (API, command), admin checks."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from acode.errors import AcodeError
from roles.models import Role
from sessions_app.models import AuditEvent, RiskSignal, WorkflowStage, WorkflowTemplate
from sessions_app.services.runs import run_start
from sessions_app.services.runs.portability import workflows_export, workflows_import
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db


def template_of(document: dict[str, Any], slug: str) -> dict[str, Any]:
    return next(t for t in document["templates"] if t["slug"] == slug)


def refused(document: dict[str, Any], code: str = "ACODE-IMP-003", **kwargs: Any) -> list[str]:
    with pytest.raises(AcodeError) as error:
        workflows_import(document, replace=kwargs.get("replace", False), actor="test")
    assert error.value.code == code
    return list(error.value.details["problems"])


# Problems of how a well-formed document fits the roles, rules, endpoints and itself (409
# ACODE-IMP-003); the others are of its form (400 ACODE-IMP-001, the published schema's).
MISFITS = (
    "unknown role 'wizard'",
    "the approval gate has no role",
    "position 0 is used by more than one stage",
    "a code stage needs a role",
    "only one approval stage",
    "no transition rule from planner to tester",
    "a review stage needs a code stage before it",
    "appears twice",
    "unknown model endpoint",
)
# Problems of its form, in the words of the published schema the document is checked with.
FORM = {
    "format: must be 'acode-workflows/1'": "format: 'acode-workflows/1' was expected",
    "unknown sections: extra": "('extra' was unexpected)",
    "purpose must be one of": "purpose: 'deploy' is not one of",
    "needs at least one stage": "stages: [] should be non-empty",
    "max_llm_calls must be": "max_llm_calls: -1 is less than the minimum of 0",
    "enabled must be true or false": "enabled: 'yes' is not of type 'boolean'",
    "slug must be a slug": "slug: 'no spaces' does not match",
    "kind must be one of": "kind: 'vibes' is not one of",
    "patterns must be a list": "patterns: '*.py' is not of type 'array'",
    "needs a threshold of at least 1": "is not valid under any of the given schemas",
    "templates: must be a list of mappings": "templates: {'low': {}} is not of type 'array', 'null'",
}


def imports() -> Any:
    return AuditEvent.objects.filter(
        event_type="RoleDataChanged", target="workflow templates and risk signals"
    )


@pytest.fixture
def staff_api(admin_user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(admin_user)
    return api


def test_export_then_import_round_trips_and_applies_edits() -> None:
    document = workflows_export()
    assert [t["slug"] for t in document["templates"]] == ["high", "low", "medium"]
    assert template_of(document, "high")["stages"][-1] == {
        "position": 5,
        "purpose": "approval",
        "role": None,
        "max_llm_calls": 0,
        "max_tokens": 0,
        "timeout_seconds": 0,
        "model": "",
    }
    # The YAML text reads back as the same document.
    assert yaml.safe_load(yaml.safe_dump(document)) == document

    edited = copy.deepcopy(document)
    template_of(edited, "medium")["max_llm_calls"] = 50
    assert template_of(edited, "medium")["max_test_attempts"] == 3  # issue 39's default
    template_of(edited, "medium")["max_test_attempts"] = 5
    template_of(edited, "medium")["stages"][1]["max_tokens"] = 9000
    edited["templates"].append(
        {
            "slug": "docs",
            "name": "Docs only",
            "risk_tier": "low",
            "stages": [{"purpose": "code", "role": "coder"}],
        }
    )
    edited["risk_signals"].append(
        {"name": "infra-paths", "kind": "path_glob", "patterns": ["infra/*"], "tier": "high"}
    )
    summary = workflows_import(edited, replace=False, actor="alice")

    assert (summary.templates, summary.signals) == (4, len(edited["risk_signals"]))
    again = workflows_export()
    assert template_of(again, "medium")["max_llm_calls"] == 50
    assert template_of(again, "medium")["max_test_attempts"] == 5
    assert template_of(again, "docs")["max_test_attempts"] == 3
    assert template_of(again, "medium")["stages"][1]["max_tokens"] == 9000
    assert template_of(again, "docs")["max_seconds"] == 7200  # the model's default
    assert template_of(again, "docs")["stages"][0]["position"] == 0
    assert RiskSignal.objects.get(name="infra-paths").tier == "high"
    event = imports().get()
    assert (event.actor, event.result) == ("alice", "imported")
    assert event.details["templates"] == ["high", "low", "medium", "docs"]

    # Importing what was exported changes nothing.
    workflows_import(again, replace=False, actor="alice")
    assert workflows_export() == again


def test_replace_removes_what_the_file_lacks_and_disables_used_templates(user: Any) -> None:
    session = session_create(owner=user, title="t", task="x")
    run_start(session=session, request="Add a greeting", user=user)  # uses "low"
    document = workflows_export()
    document["templates"] = [template_of(document, "medium")]
    document["risk_signals"] = document["risk_signals"][:1]

    summary = workflows_import(document, replace=True, actor="test")

    assert summary.removed[0] == "template high"
    assert summary.disabled == ["template low"]
    assert set(WorkflowTemplate.objects.values_list("slug", "enabled")) == {
        ("low", False),
        ("medium", True),
    }
    assert RiskSignal.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.update(format="other/1"), "format: must be 'acode-workflows/1'"),
        (lambda d: d.update(extra=[]), "unknown sections: extra"),
        (
            lambda d: template_of(d, "low")["stages"][0].update(role="wizard"),
            "unknown role 'wizard'",
        ),
        (
            lambda d: template_of(d, "high")["stages"][-1].update(role="reviewer"),
            "the approval gate has no role",
        ),
        (
            lambda d: template_of(d, "low")["stages"][1].update(position=0),
            "position 0 is used by more than one stage",
        ),
        (
            lambda d: template_of(d, "low")["stages"][0].update(purpose="deploy"),
            "purpose must be one of",
        ),
        (
            lambda d: template_of(d, "low")["stages"][0].update(role=None),
            "a code stage needs a role",
        ),
        (
            lambda d: template_of(d, "high")["stages"].insert(
                0, {"position": 9, "purpose": "approval"}
            ),
            "only one approval stage",
        ),
        (
            lambda d: template_of(d, "medium").update(
                stages=[
                    {"position": 0, "purpose": "plan", "role": "planner"},
                    {"position": 1, "purpose": "explore", "role": "tester"},
                ]
            ),
            "no transition rule from planner to tester",
        ),
        (
            lambda d: template_of(d, "medium").update(
                stages=[{"position": 0, "purpose": "review", "role": "reviewer"}]
            ),
            "a review stage needs a code stage before it",
        ),
        (lambda d: template_of(d, "low").update(stages=[]), "needs at least one stage"),
        (lambda d: template_of(d, "low").update(max_llm_calls=-1), "max_llm_calls must be"),
        (lambda d: template_of(d, "low").update(enabled="yes"), "enabled must be true or false"),
        (lambda d: template_of(d, "low").update(slug="no spaces"), "slug must be a slug"),
        (
            lambda d: template_of(d, "low").update(
                name="Medium risk: plan, then code, test and review each step"
            ),
            "appears twice",
        ),
        (lambda d: d["risk_signals"][0].update(kind="vibes"), "kind must be one of"),
        (lambda d: d["risk_signals"][0].update(patterns="*.py"), "patterns must be a list"),
        (
            lambda d: d["risk_signals"].append(
                {"name": "big", "kind": "plan_steps", "tier": "high"}
            ),
            "needs a threshold of at least 1",
        ),
        (lambda d: d.update(templates={"low": {}}), "templates: must be a list of mappings"),
        (
            lambda d: template_of(d, "low")["stages"][0].update(model="no-such-endpoint"),
            "unknown model endpoint",
        ),
    ],
)
def test_bad_documents_are_refused_whole_with_the_import_code(change: Any, problem: str) -> None:
    before = workflows_export()
    document = copy.deepcopy(before)
    change(document)
    if problem in MISFITS:
        problems = refused(document, "ACODE-IMP-003")
    else:
        problem = FORM[problem]
        problems = refused(document, "ACODE-IMP-001")
    assert any(problem in p for p in problems), problems
    assert workflows_export() == before
    assert not imports().exists()


def test_a_refusal_of_neither_form_names_what_the_closest_one_lacks() -> None:
    document = workflows_export()
    document["risk_signals"].append({"name": "big", "kind": "plan_steps", "tier": "high"})
    problems = refused(document, "ACODE-IMP-001")
    assert any(
        p.startswith("risk_signals/")
        and p.endswith(
            "is not valid under any of the given schemas ('threshold' is a required property)"
        )
        for p in problems
    ), problems


def test_the_management_command_exports_and_imports(tmp_path: Path, capsys: Any) -> None:
    target = tmp_path / "workflows.yaml"
    call_command("acode_workflows", "export", str(target))
    document = yaml.safe_load(target.read_text())
    assert document["format"] == "acode-workflows/1"

    template_of(document, "low")["description"] = "Edited from a file"
    target.write_text(yaml.safe_dump(document))
    call_command("acode_workflows", "import", str(target))
    assert WorkflowTemplate.objects.get(slug="low").description == "Edited from a file"
    assert "imported 3 workflow templates" in capsys.readouterr().out

    template_of(document, "low")["stages"][0]["role"] = "wizard"
    target.write_text(yaml.safe_dump(document))
    with pytest.raises(CommandError) as error:
        call_command("acode_workflows", "import", str(target))
    assert "ACODE-IMP-003" in str(error.value) and "unknown role 'wizard'" in str(error.value)

    target.write_text("- not\n- a mapping\n")
    with pytest.raises(CommandError, match="ACODE-IMP-001"):
        call_command("acode_workflows", "import", str(target))


def test_templates_and_signals_are_readable_by_every_user(api: APIClient) -> None:
    listed = api.get("/api/workflows/").json()
    assert {t["slug"] for t in listed} == {"low", "medium", "high"}
    high = api.get("/api/workflows/high/").json()
    assert [(s["purpose"], s["role"]) for s in high["stages"]][-2:] == [
        ("review", "reviewer"),
        ("approval", None),
    ]
    assert high["stages"][0]["role_name"] == "Planner"
    missing = api.get("/api/workflows/nope/")
    assert missing.status_code == 404 and missing.json()["code"] == "ACODE-API-404"
    signals = api.get("/api/risk-signals/").json()
    assert any(s["name"] == "auth-paths" and s["tier"] == "high" for s in signals)


def test_export_and_import_over_the_api_are_for_staff(api: APIClient, staff_api: APIClient) -> None:
    assert api.get("/api/workflows/export/").status_code == 403
    text = staff_api.get("/api/workflows/export/")
    assert text.status_code == 200 and text["Content-Type"] == "application/yaml"
    forbidden = api.generic("POST", "/api/workflows/import/", text.content, "application/yaml")
    assert forbidden.status_code == 403 and forbidden.json()["code"] == "ACODE-API-403"

    document = yaml.safe_load(text.content)
    template_of(document, "high")["approval_ttl_minutes"] = 60
    imported = staff_api.generic(
        "POST", "/api/workflows/import/", yaml.safe_dump(document), "application/yaml"
    )
    assert imported.status_code == 200, imported.content
    assert imported.json() == {
        "templates": 3,
        "stages": 13,
        "signals": len(document["risk_signals"]),
        "removed": [],
        "disabled": [],
    }
    assert WorkflowTemplate.objects.get(slug="high").approval_ttl_minutes == 60

    for body in ("templates: [", "just text", "format: acode-workflows/1\ntemplates: 5\n"):
        bad = staff_api.generic("POST", "/api/workflows/import/", body, "application/yaml")
        assert bad.status_code == 400, body
        assert bad.json()["code"] == "ACODE-IMP-001"


def _admin_form(stages: list[tuple[str, str | None]]) -> dict[str, Any]:
    roles = dict(Role.objects.values_list("slug", "pk"))
    data: dict[str, Any] = {
        "slug": "ordered",
        "name": "Ordered",
        "description": "",
        "risk_tier": "low",
        "enabled": "on",
        "max_revisions_per_step": 2,
        "max_revisions_per_run": 6,
        "max_test_attempts": 3,
        "max_llm_calls": 200,
        "max_tokens": 2_000_000,
        "max_seconds": 7200,
        "approval_ttl_minutes": 1440,
        "stages-TOTAL_FORMS": len(stages),
        "stages-INITIAL_FORMS": 0,
        "stages-MIN_NUM_FORMS": 0,
        "stages-MAX_NUM_FORMS": 1000,
    }
    for index, (purpose, role) in enumerate(stages):
        data |= {
            f"stages-{index}-position": index,
            f"stages-{index}-purpose": purpose,
            f"stages-{index}-role": roles[role] if role else "",
            f"stages-{index}-max_llm_calls": 0,
            f"stages-{index}-max_tokens": 0,
            f"stages-{index}-timeout_seconds": 0,
            f"stages-{index}-model": "",
        }
    return data


def test_admin_refuses_a_template_whose_stages_cannot_follow_each_other(
    admin_client_logged_in: Any,
) -> None:
    url = "/admin/sessions_app/workflowtemplate/add/"
    impossible = _admin_form([("plan", "planner"), ("explore", "tester")])
    response = admin_client_logged_in.post(url, impossible)
    assert response.status_code == 200  # the form again, with the error
    assert "no transition rule from planner to tester" in response.content.decode()
    assert not WorkflowTemplate.objects.filter(slug="ordered").exists()

    gate_with_role = _admin_form([("code", "coder"), ("approval", "reviewer")])
    response = admin_client_logged_in.post(url, gate_with_role)
    assert "the approval gate has no role" in response.content.decode()

    possible = _admin_form([("code", "coder"), ("review", "reviewer"), ("approval", None)])
    response = admin_client_logged_in.post(url, possible)
    assert response.status_code == 302, response.content.decode()[-2000:]
    saved = WorkflowStage.objects.filter(template__slug="ordered").order_by("position")
    assert [(s.purpose, s.role.slug if s.role else None) for s in saved] == [
        ("code", "coder"),
        ("review", "reviewer"),
        ("approval", None),
    ]


def test_admin_shows_runs_read_only(admin_client_logged_in: Any, admin_user: Any) -> None:
    session = session_create(owner=admin_user, title="t", task="x")
    run = run_start(session=session, request="Add a greeting", user=admin_user)
    listing = admin_client_logged_in.get("/admin/sessions_app/run/")
    assert listing.status_code == 200 and str(run.pk) in listing.content.decode()
    page = admin_client_logged_in.get(f"/admin/sessions_app/run/{run.pk}/change/")
    assert page.status_code == 200
    assert "Executing plan step 1/1" in page.content.decode()
    assert admin_client_logged_in.get("/admin/sessions_app/run/add/").status_code == 403
    assert admin_client_logged_in.get("/admin/sessions_app/workflowtemplate/").status_code == 200
    assert admin_client_logged_in.get("/admin/sessions_app/risksignal/").status_code == 200
