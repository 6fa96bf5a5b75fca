"""Usage at a glance (issue 34): tokens, LLM calls, tool calls, job time and cost by role,
user and day, over the API and as the usage page's chart data (Chartist draws what the
page carries). Jobs run in-process against scripted endpoints (the LLM boundary)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from roles.models import ModelEndpoint
from tests.sessions_app.jobkit import run, scripted_model, session_in

pytestmark = pytest.mark.django_db

READ = {
    "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
    "usage": {"prompt_tokens": 1000, "completion_tokens": 100},
}
DONE = {"content": "Nothing to change.", "usage": {"prompt_tokens": 500, "completion_tokens": 50}}


@pytest.fixture
def usage_world(user: User, lead: User) -> dict[str, Any]:
    """The developer's Explorer job on a priced endpoint (two model calls, one tool call);
    the lead's Default job on an unpriced one (one call)."""
    priced = scripted_model("explorer", [READ, DONE], name="priced")
    priced.input_price, priced.output_price = Decimal(2), Decimal(10)  # per million tokens
    priced.save()
    scripted_model(
        "default", [{"content": "Hi.", "usage": {"prompt_tokens": 70, "completion_tokens": 7}}]
    )
    mine = run(session_in("explorer", user), "Look around", user)
    theirs = run(session_in("default", lead), "Say hi", lead)
    return {"mine": mine, "theirs": theirs}


def totals(user: User, by: str) -> dict[str, Any]:
    api = APIClient()
    api.force_authenticate(user)
    response = api.get("/api/usage/totals/", {"by": by})
    assert response.status_code == 200, response.content
    return dict(response.json())


def test_totals_by_role_sum_tokens_calls_and_cost_where_an_endpoint_has_a_price(
    usage_world: dict[str, Any], lead: User
) -> None:
    data = totals(lead, "role")
    rows = {row["key"]: row for row in data["rows"]}
    explorer, default = rows["explorer"], rows["default"]
    assert (explorer["tokens_in"], explorer["tokens_out"], explorer["tokens"]) == (1500, 150, 1650)
    assert (explorer["llm_calls"], explorer["tool_calls"], explorer["jobs"]) == (2, 1, 1)
    # 1,500 tokens in at 2 and 150 out at 10 per million.
    assert explorer["cost"] == "0.0045" and explorer["unpriced_tokens"] == 0
    assert default["cost"] is None and default["unpriced_tokens"] == 77
    assert explorer["seconds"] > 0 and default["llm_calls"] == 1  # started to finished
    total = data["total"]
    assert (total["tokens"], total["llm_calls"], total["tool_calls"]) == (1727, 3, 1)
    assert total["cost"] == "0.0045"
    assert [row["key"] for row in data["rows"]] == ["explorer", "default"]  # most tokens first


def test_totals_by_user_and_day_count_only_the_sessions_a_user_sees(
    usage_world: dict[str, Any], user: User, lead: User
) -> None:
    everyone = {row["key"]: row["tokens"] for row in totals(lead, "user")["rows"]}
    assert everyone == {"dev": 1650, "lead": 77}
    mine = totals(user, "user")
    assert [(row["key"], row["tokens"]) for row in mine["rows"]] == [("dev", 1650)]
    days = totals(lead, "day")["rows"]
    assert [row["key"] for row in days] == [timezone.localdate().isoformat()]
    assert days[0]["llm_calls"] == 3 and days[0]["tool_calls"] == 1


def test_a_bad_grouping_is_refused_with_its_code(user: User) -> None:
    api = APIClient()
    api.force_authenticate(user)
    refused = api.get("/api/usage/totals/", {"by": "planet"})
    assert refused.status_code == 400 and refused.json()["code"] == "ACODE-API-400"


def chart_data(html: str) -> dict[str, Any]:
    found = re.search(r'<script id="usage-chart-data" type="application/json">(.*?)</script>', html)
    assert found, html
    return dict(json.loads(found.group(1)))


def test_the_usage_page_charts_the_same_totals_with_a_vendored_chartist(
    usage_world: dict[str, Any], lead_client: Client
) -> None:
    html = lead_client.get("/usage/").content.decode()
    assert "/static/vendor/chartist.umd.js" in html and "/static/usage.js" in html
    assert "cdn" not in html.lower()
    charts = chart_data(html)
    role = charts["role"]
    assert role["labels"] == ["Explorer", "Default"]
    assert role["tokens_in"] == [1500, 70] and role["tokens_out"] == [150, 7]
    assert role["llm_calls"] == [2, 1] and role["tool_calls"] == [1, 0]
    assert charts["user"]["labels"] == ["dev", "lead"]
    assert len(charts["day"]["labels"]) == 1
    # The tables under the charts, with the cost column.
    by_role = html[html.index('id="usage-by-role"') :]
    assert re.search(r'<tr data-key="explorer">.*?data-col="cost">0.0045<', by_role, re.S)
    assert re.search(r'<tr data-key="default">.*?data-col="cost">—<', by_role, re.S)


def test_without_jobs_the_page_says_so(dev_client: Client) -> None:
    html = dev_client.get("/usage/").content.decode()
    assert "No jobs yet" in html
    assert "Set a price per million tokens on a model endpoint" in html
    assert ModelEndpoint.objects.count() == 0
