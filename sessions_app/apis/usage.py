"""/api/usage/totals/: tokens, model calls, tool calls, job time and cost of the sessions
the caller sees, by role, user or day (issue 34; the usage page charts the same)."""

from __future__ import annotations

from datetime import timedelta

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
from sessions_app.selectors.totals import USAGE_GROUPS, usage_totals

USAGE_MAX_DAYS = 3660


class UsageTotalsQuery(Query):
    by = serializers.ChoiceField(
        choices=list(USAGE_GROUPS), required=False, help_text="Group by role (default), user "
        "(the session's owner) or day."
    )  # fmt: skip
    days = serializers.IntegerField(
        min_value=1,
        max_value=USAGE_MAX_DAYS,
        required=False,
        help_text="Only jobs created in the last this many days (default: all).",
    )


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
        query = query_of(UsageTotalsQuery, request)
        days = query.get("days")
        since = timezone.now() - timedelta(days=days) if days else None
        data = usage_totals(
            sessions_visible_to(request_user(request)), by=query.get("by", "role"), since=since
        )
        return Response(UsageTotalsOutput(data).data)
