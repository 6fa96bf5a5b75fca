"""Risk as seed 002 scores it, a role's reasoning effort as data, and what a plan keeps
(issue 39, items 4 and 5): the parts the worker tests (``test_runs_risk_review_workers``)
do not reach, in process."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from acode.llm import Endpoint, OpenAIProvider
from roles.portability.definitions import export_definitions, import_definitions
from roles.registry import registry
from sessions_app.agent.plans import plan_from_answer
from sessions_app.models import RiskSignal, WorkflowTemplate
from sessions_app.services.plans import plan_notes
from sessions_app.services.runs import run_start
from sessions_app.services.runs.portability import workflows_export, workflows_import
from sessions_app.services.runs.stages import Risk, gate_required_for, risk_of
from sessions_app.services.sessions import session_create
from tests.sessions_app.runkit import other_reviewer

pytestmark = pytest.mark.django_db


def hit(signal: str, tier: str, score: int, sensitive: bool = False) -> dict[str, Any]:
    return {"signal": signal, "tier": tier, "score": score, "sensitive": sensitive, "where": "x"}


def test_the_score_adds_the_declared_tier_and_each_signal_once() -> None:
    assert risk_of("low", []) == Risk("low", 0, False)
    # Three low-tier signals of a point each reach medium together; one firing twice counts once.
    three = [hit("a", "low", 1), hit("b", "low", 1), hit("c", "low", 1), hit("c", "low", 1)]
    assert risk_of("low", three) == Risk("medium", 3, False)
    assert risk_of("medium", [hit("a", "low", 2), hit("b", "low", 1)]).tier == "high"
    # A signal's tier is a floor whatever its score.
    assert risk_of("low", [hit("auth", "high", 0)]) == Risk("high", 0, False)
    assert risk_of("low", [hit("settings", "medium", 1, sensitive=True)]).sensitive


def test_the_gate_opens_at_medium_only_for_a_sensitive_tag_or_path() -> None:
    medium = WorkflowTemplate.objects.get(slug="medium")
    assert not gate_required_for(Risk("medium", 4, False), medium)
    assert gate_required_for(Risk("medium", 4, True), medium)
    assert not gate_required_for(Risk("low", 1, True), WorkflowTemplate.objects.get(slug="low"))
    assert gate_required_for(Risk("high", 6, False), medium)


def test_a_request_naming_a_dependency_file_scores_and_opens_the_gate(user: Any) -> None:
    other_reviewer()  # the medium template wants a review by a model other than the Coder's
    session = session_create(owner=user, title="deps", task="deps")
    run = run_start(session=session, request="Pin requests in requirements.txt", user=user)
    names = {s["signal"] for s in run.signals}
    assert names == {"dependency-files", "unattended"}  # medium: its template has no gate
    assert (run.effective_tier, run.risk_score, run.gate_required) == ("medium", 2, True)
    client = Client()
    client.force_login(user)
    data = client.get(f"/api/runs/{run.pk}/").json()
    assert data["risk_score"] == 2
    assert {(s["signal"], s["sensitive"]) for s in data["signals"]} == {
        ("dependency-files", True),
        ("unattended", False),
    }


def test_workflows_yaml_round_trips_final_review_scores_and_the_autonomy_signal() -> None:
    document = workflows_export()
    high = next(t for t in document["templates"] if t["slug"] == "high")
    assert high["final_review"] is True
    signals = {s["name"]: s for s in document["risk_signals"]}
    assert (signals["settings-paths"]["score"], signals["settings-paths"]["sensitive"]) == (1, True)
    assert signals["unattended"]["kind"] == "unattended" and signals["unattended"]["patterns"] == []
    high["final_review"] = False
    signals["schema-words"].update(score=4, sensitive=True)
    workflows_import(document, replace=False, actor="test")
    assert not WorkflowTemplate.objects.get(slug="high").final_review
    edited = RiskSignal.objects.get(name="schema-words")
    assert (edited.score, edited.sensitive) == (4, True)
    assert workflows_export() == document


def test_reasoning_effort_is_role_data_in_the_api_and_yaml(admin_user: Any) -> None:
    api = APIClient()
    api.force_authenticate(admin_user)
    changed = api.patch("/api/roles/reviewer/", {"reasoning_effort": "high"}, format="json")
    assert changed.status_code == 200, changed.content
    assert api.get("/api/roles/reviewer/").json()["reasoning_effort"] == "high"
    bad = api.patch("/api/roles/reviewer/", {"reasoning_effort": "extreme"}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "ACODE-ROL-004"
    assert "reasoning_effort" in str(bad.json()["details"])

    exported = export_definitions()
    reviewer = next(r for r in exported["roles"] if r["slug"] == "reviewer")
    assert reviewer["reasoning_effort"] == "high"
    coder = next(r for r in exported["roles"] if r["slug"] == "coder")
    assert "reasoning_effort" not in coder  # blank: not written (its content hash is kept)
    coder["reasoning_effort"] = "low"
    import_definitions(exported, actor="test")
    registry.sync()
    assert registry.get("coder").spec.reasoning_effort == "low"


def test_the_openai_request_carries_reasoning_effort_only_when_set() -> None:
    endpoint = Endpoint(name="e", kind="openai", base_url="http://127.0.0.1:9/v1", model="m")
    plain = OpenAIProvider(endpoint)._request([{"role": "user", "content": "hi"}], [], 10, None)
    assert "reasoning_effort" not in plain
    effortful = Endpoint(**{**endpoint.__dict__, "reasoning_effort": "medium"})
    sent = OpenAIProvider(effortful)._request([{"role": "user", "content": "hi"}], [], 10, None)
    assert sent["reasoning_effort"] == "medium"


def test_a_plan_keeps_complexity_risks_and_acceptance_criteria() -> None:
    answer = (
        '{"complexity": "Medium", "risks": ["slow tests", ""], "steps": [{"title": "A", '
        '"files": ["a.py"], "acceptance": ["a() returns 1"]}, {"title": "B", "acceptance": "b"}]}'
    )
    steps = plan_from_answer(answer)
    assert [s["acceptance"] for s in steps] == [["a() returns 1"], ["b"]]
    assert plan_notes(answer) == {"complexity": "medium", "risks": ["slow tests"]}
    assert plan_notes("1. a\n2. b") == {}
