"""Quality metrics of runs (issue 39): first-time test pass rate, approvals without
revisions and scope creep, per role, model and template, over the API and on the usage
page, computed over a seeded history and matched against hand-counted values; and the same
read from a run the engine really ran (in-process, scripted models)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, Run, RunStatus
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.factories import make_role, make_run, make_stage, make_template
from tests.sessions_app.runkit import drive, review, script_medium_run

pytestmark = pytest.mark.django_db

PASS = {"ran": True, "result": "passed", "status": "passed (exit 0)"}
FAIL = {"ran": True, "result": "failed", "status": "tests failed (exit 1)"}
NONE_RAN = {"ran": False, "result": "no_tests"}
APPROVE = {"verdict": "approve", "summary": "fine"}
REVISE = {"verdict": "request_changes", "summary": "not yet"}


def code(run: Run, *, role: str = "coder", model: str, step: int, changed: list[str],
         planned: list[str]) -> None:  # fmt: skip
    make_stage(run, "code", role=role, model=model, step=step,
               evidence={"changed": changed, "planned": planned})  # fmt: skip


def checked(run: Run, evidence: dict[str, Any], *, step: int, status: str = "succeeded") -> None:
    make_stage(run, "test", role="tester", model="m-test", step=step, status=status,
               evidence=evidence)  # fmt: skip


def verdict(run: Run, said: dict[str, Any], *, step: int) -> None:
    make_stage(run, "review", role="reviewer", model="m-review", step=step, verdict=said)


@pytest.fixture
def history(user: User, lead: User) -> dict[str, Any]:
    """Five runs in the developer's session and one in the lead's (hand-counted in the
    tests): two coder roles, two models, two templates; passes, failures, a Tester that ran
    nothing, a failed and a running Tester stage; revisions; files outside the plan."""
    make_role("coder-fast", name="Fast coder")
    alpha, beta = make_template("alpha"), make_template("beta")
    mine = session_create(owner=user, title="mine", task="quality")
    theirs = session_create(owner=lead, title="theirs", task="quality")

    # 1 (alpha): step 1 passes and is approved; step 2 fails its first tests, is revised
    # once on review; c.py is outside the plan.
    r1, ab = make_run(mine, alpha), ["a.py", "b.py"]
    code(r1, model="gpt-a", step=1, changed=["a.py"], planned=ab)
    checked(r1, PASS, step=1)
    verdict(r1, APPROVE, step=1)
    code(r1, model="gpt-a", step=2, changed=["a.py", "b.py", "c.py"], planned=ab)
    checked(r1, FAIL, step=2)
    code(r1, model="gpt-a", step=2, changed=["a.py", "b.py", "c.py"], planned=ab)
    checked(r1, PASS, step=2)
    verdict(r1, REVISE, step=2)
    code(r1, model="gpt-a", step=2, changed=["a.py", "b.py", "c.py"], planned=ab)
    checked(r1, PASS, step=2)
    verdict(r1, APPROVE, step=2)
    # 2 (alpha, the fast coder on gpt-b): the Tester ran no tests; approved; in scope.
    r2 = make_run(mine, alpha)
    code(r2, role="coder-fast", model="gpt-b", step=1, changed=["x.py"], planned=["x.py"])
    checked(r2, NONE_RAN, step=1)
    verdict(r2, APPROVE, step=1)
    # 3 (beta): its plan names no files (no scope to creep from); step 2's Tester failed.
    r3 = make_run(mine, beta, status=RunStatus.FAILED)
    code(r3, model="gpt-b", step=1, changed=["y.py"], planned=[])
    checked(r3, PASS, step=1)
    verdict(r3, APPROVE, step=1)
    code(r3, model="gpt-b", step=2, changed=["y.py", "z.py"], planned=[])
    checked(r3, {}, step=2, status="failed")
    # 4 (beta): still testing; docs/ is planned as a directory, setup.cfg is not.
    r4 = make_run(mine, beta, status=RunStatus.RUNNING)
    code(r4, model="gpt-a", step=1, changed=["docs/guide.md", "m.py", "setup.cfg"],
         planned=["docs/", "m.py"])  # fmt: skip
    checked(r4, {}, step=1, status="running")
    # 5 (beta, the fast coder): a review without a verdict blocked it; after a person's
    # answer the step went to gpt-a, which wrote l.py outside the plan; then approved.
    r5 = make_run(mine, beta)
    code(r5, role="coder-fast", model="gpt-b", step=1, changed=["k.py"], planned=["k.py"])
    checked(r5, PASS, step=1)
    verdict(r5, {}, step=1)
    code(r5, role="coder-fast", model="gpt-a", step=1, changed=["k.py", "l.py"],
         planned=["k.py"])  # fmt: skip
    checked(r5, PASS, step=1)
    verdict(r5, APPROVE, step=1)
    # The final review of the whole change (plan step 0) asked for changes: run 2 was not
    # approved without revisions, though its step was.
    verdict(r2, REVISE, step=0)
    # 6 (alpha, the lead's session): tests fail, changes requested; in scope.
    r6 = make_run(theirs, alpha, status=RunStatus.RUNNING)
    code(r6, model="gpt-a", step=1, changed=["q.py"], planned=["q.py"])
    checked(r6, FAIL, step=1)
    verdict(r6, REVISE, step=1)
    return {"mine": mine, "theirs": theirs}


def quality(user: User, by: str) -> dict[str, Any]:
    api = APIClient()
    api.force_authenticate(user)
    response = api.get("/api/usage/quality/", {"by": by})
    assert response.status_code == 200, response.content
    return dict(response.json())


def ratios(row: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    names = ("first_time_pass", "approved_without_revisions", "scope_creep")
    return tuple((row[name]["count"], row[name]["of"]) for name in names)


def test_the_metrics_of_a_seeded_history_match_the_hand_counted_values(
    history: dict[str, Any], user: User
) -> None:
    by_role = quality(user, "role")
    # Steps' first tests: 1.1 pass, 1.2 fail, 2.1 none ran, 3.1 pass, 3.2 failed stage,
    # 5.1 pass (4.1 is still testing). First verdicts: 1.1, 2.1, 3.1, 5.1 approve; 1.2
    # changes. Files: a b c(out), x, docs/guide.md m setup.cfg(out), k l(out); run 3 unmeasured.
    total = by_role["total"]
    assert ratios(total) == ((3, 6), (4, 5), (3, 9))
    assert total["first_time_pass"]["rate"] == 0.5
    assert total["approved_without_revisions"]["rate"] == 0.8
    assert total["scope_creep"]["rate"] == 0.3333
    assert by_role["runs"] == {
        "reviewed": 4, "approved_without_revisions": 2, "measured_for_creep": 4, "with_creep": 3,
    }  # fmt: skip
    rows = {row["key"]: row for row in by_role["rows"]}
    assert [row["name"] for row in by_role["rows"]] == ["Coder", "Fast coder"]
    assert ratios(rows["coder"]) == ((2, 4), (2, 3), (2, 6))
    assert ratios(rows["coder-fast"]) == ((1, 2), (2, 2), (1, 3))

    by_model = {row["key"]: ratios(row) for row in quality(user, "model")["rows"]}
    # l.py counts for gpt-a, the model that wrote it, though the step is gpt-b's.
    assert by_model == {"gpt-a": ((1, 2), (1, 2), (3, 7)), "gpt-b": ((2, 4), (3, 3), (0, 2))}

    by_template = {row["key"]: ratios(row) for row in quality(user, "template")["rows"]}
    assert by_template == {"alpha": ((1, 3), (2, 3), (1, 4)), "beta": ((2, 3), (2, 2), (2, 5))}


def test_the_metrics_count_only_the_runs_a_user_sees(history: dict[str, Any], lead: User) -> None:
    data = quality(lead, "template")
    assert ratios(data["total"]) == ((3, 7), (4, 6), (3, 10))
    rows = {row["key"]: ratios(row) for row in data["rows"]}
    assert rows["alpha"] == ((1, 4), (2, 4), (1, 5))
    assert data["runs"]["reviewed"] == 5 and data["runs"]["measured_for_creep"] == 5


def test_without_runs_every_rate_is_null(user: User) -> None:
    data = quality(user, "model")
    assert data["rows"] == []
    assert data["total"]["first_time_pass"] == {"count": 0, "of": 0, "rate": None}


def test_a_bad_grouping_is_refused_with_its_code(user: User) -> None:
    api = APIClient()
    api.force_authenticate(user)
    refused = api.get("/api/usage/quality/", {"by": "day"})
    assert refused.status_code == 400 and refused.json()["code"] == "ACODE-API-400"


def row_text(html: str, section: str, key: str) -> str:
    part = html[html.index(f'id="quality-by-{section}"') :]
    found = re.search(rf'<tr data-key="{re.escape(key)}">(.*?)</tr>', part, re.S)
    assert found, part[:2000]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1))).strip()


def test_the_usage_page_shows_the_same_metrics_with_bars(
    history: dict[str, Any], dev_client: Client
) -> None:
    html = dev_client.get("/usage/").content.decode()
    assert "Quality of runs" in html
    assert row_text(html, "role", "coder") == ("Coder 50.0% (2 of 4) 66.7% (2 of 3) 33.3% (2 of 6)")
    assert row_text(html, "model", "gpt-b") == "gpt-b 50.0% (2 of 4) 100.0% (3 of 3) 0.0% (0 of 2)"
    assert row_text(html, "template", "beta") == (
        "Beta 66.7% (2 of 3) 100.0% (2 of 2) 40.0% (2 of 5)"
    )
    assert row_text(html, "template", "total") == (
        "All 50.0% (3 of 6) 80.0% (4 of 5) 33.3% (3 of 9)"
    )
    assert "2 of 4 reviewed runs never had changes requested" in html
    assert "3 of 4 such runs crept" in html
    # The bars are drawn on the server: a rect as wide as the rate, out of 100.
    beta = html[html.index('id="quality-by-template"') :]
    beta = beta[beta.index('<tr data-key="beta">') :]
    assert '<rect class="bar" width="66.7"' in beta[: beta.index("</tr>")]


def test_the_page_says_when_there_are_no_runs(dev_client: Client) -> None:
    html = dev_client.get("/usage/").content.decode()
    assert html.count("No runs yet.") == 3


def test_a_run_the_engine_ran_is_measured_from_what_it_recorded(user: User) -> None:
    """A medium run (Planner, Coder, Tester, Reviewer): the Reviewer asks for one revision,
    then approves; greet.py is the plan's file."""
    script_medium_run(
        reviews=[review("request_changes", "take a name"), review("approve", "right")]
    )
    session: AgentSession = session_create(owner=user, title="runs", task="greeting")
    run = drive(run_start(session=session, request="Add a greeting helper", user=user,
                          risk="medium"))  # fmt: skip
    assert run.status == RunStatus.SUCCEEDED, run.message
    code_stage = run.stages.filter(purpose="code").first()
    assert code_stage is not None and code_stage.evidence["planned"] == ["greet.py"]
    data = quality(user, "role")
    (row,) = data["rows"]
    assert row["key"] == "coder"
    # The workspace has no test for pytest to collect: the first Tester stage did not pass.
    first_test = run.stages.filter(purpose="test").order_by("seq").first()
    assert first_test is not None and first_test.evidence["result"] != "passed"
    assert ratios(row) == ((0, 1), (0, 1), (0, 1))
    assert data["runs"] == {
        "reviewed": 1, "approved_without_revisions": 0, "measured_for_creep": 1, "with_creep": 0,
    }  # fmt: skip
