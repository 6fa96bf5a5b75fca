"""/api/usage/totals/: tokens, model calls, tool calls, job time and cost of the sessions
the caller sees, by role, user or day (issue 34); /api/usage/quality/: the quality metrics
of their runs, by role, model or template (issue 39). The usage page charts the same."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Query, query_of
from sessions_app.apis.common import request_user
from sessions_app.permissions import sessions_visible_to
from sessions_app.selectors.quality import QUALITY_GROUPS, quality_metrics
from sessions_app.selectors.totals import USAGE_GROUPS, usage_totals

USAGE_MAX_DAYS = 3660


def _days(what: str) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=1,
        max_value=USAGE_MAX_DAYS,
        required=False,
        help_text=f"Only {what} in the last this many days (default: all).",
    )


def _grouped(request: Request, query: type[Query], compute: Callable[..., Any]) -> Any:
    """``compute`` (totals, quality) over the sessions the caller sees, grouped by the
    query's ``by`` (default: role) and limited to its last ``days``."""
    wanted = query_of(query, request)
    days = wanted.get("days")
    since = timezone.now() - timedelta(days=days) if days else None
    sessions = sessions_visible_to(request_user(request))
    return compute(sessions, by=wanted.get("by", "role"), since=since)


class UsageTotalsQuery(Query):
    by = serializers.ChoiceField(
        choices=list(USAGE_GROUPS), required=False, help_text="Group by role (default), user "
        "(the session's owner) or day."
    )  # fmt: skip
    days = _days("jobs created")


class UsageTotalsRowOutput(serializers.Serializer):
    key = serializers.CharField(help_text="The role's slug, the owner's username or the day.")
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    tokens = serializers.IntegerField()
    llm_calls = serializers.IntegerField()
    tool_calls = serializers.IntegerField()
    jobs = serializers.IntegerField()
    seconds = serializers.FloatField(help_text="The jobs' wall time (started to finished).")
    cost = serializers.CharField(
        allow_null=True,
        help_text="What the calls cost at their endpoints' prices per million tokens, as a "
        "decimal string; null when no call of the row went to a priced endpoint.",
    )
    unpriced_tokens = serializers.IntegerField(
        help_text="Tokens of calls to endpoints without a price (not in cost)."
    )


class UsageTotalsOutput(serializers.Serializer):
    by = serializers.CharField()
    rows = UsageTotalsRowOutput(many=True)
    total = UsageTotalsRowOutput()


class UsageTotalsApi(APIView):
    @extend_schema(
        parameters=[UsageTotalsQuery],
        responses={200: UsageTotalsOutput, **error_responses("ACODE-API-400")},
        operation_id="usage_totals",
        description="Totals of tokens, LLM calls, tool calls and job time, with a cost where "
        "an endpoint has a price, over the sessions the caller sees, per role, user or day.",
    )
    def get(self, request: Request) -> Response:
        return Response(UsageTotalsOutput(_grouped(request, UsageTotalsQuery, usage_totals)).data)


# -- /api/usage/quality/: the quality metrics of runs (issue 39) ------------------------


class UsageQualityQuery(Query):
    by = serializers.ChoiceField(
        choices=list(QUALITY_GROUPS), required=False, help_text="Group by role (default: the "
        "role of a step's first Coder stage), model (the model that answered it) or template."
    )  # fmt: skip
    days = _days("runs started")


class RatioOutput(serializers.Serializer):
    count = serializers.IntegerField()
    of = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="count / of; null when of is 0.")


class UsageQualityRowOutput(serializers.Serializer):
    key = serializers.CharField(
        help_text="The role's slug, the model's name or the template's slug; empty when unknown."
    )
    name = serializers.CharField(
        help_text="What the page shows: the role's or template's name, the model."
    )
    first_time_pass = RatioOutput(
        help_text="Plan steps whose first Tester stage passed, of the steps whose first "
        "Tester stage ended."
    )
    approved_without_revisions = RatioOutput(
        help_text="Plan steps whose first review verdict was approve, of the steps reviewed."
    )
    scope_creep = RatioOutput(
        help_text="Files changed outside the files the run's plan names, of the files "
        "changed (runs whose plan names files)."
    )


class UsageQualityRunsOutput(serializers.Serializer):
    reviewed = serializers.IntegerField(help_text="Runs with at least one review verdict.")
    approved_without_revisions = serializers.IntegerField(
        help_text="Reviewed runs whose reviews never requested changes."
    )
    measured_for_creep = serializers.IntegerField(help_text="Runs whose plan names files.")
    with_creep = serializers.IntegerField(
        help_text="Measured runs that changed a file outside their plan's files."
    )


class UsageQualityOutput(serializers.Serializer):
    by = serializers.CharField()
    rows = UsageQualityRowOutput(many=True)
    total = UsageQualityRowOutput()
    runs = UsageQualityRunsOutput()


class UsageQualityApi(APIView):
    @extend_schema(
        parameters=[UsageQualityQuery],
        responses={200: UsageQualityOutput, **error_responses("ACODE-API-400")},
        operation_id="usage_quality",
        description="Quality metrics of the runs in the sessions the caller sees: first-time "
        "test pass rate, approvals without revisions and scope creep, per role, model or "
        "template (the usage page charts the same).",
    )
    def get(self, request: Request) -> Response:
        data = _grouped(request, UsageQualityQuery, quality_metrics)
        return Response(UsageQualityOutput(data).data)
