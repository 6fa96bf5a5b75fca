"""POST /api/roles/<name>/replay/: preview a change to a role against its recorded tool
decisions (``roles.services.replay``). Role admins only (it shows audit rows of every
session); nothing is written."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_naive, make_aware
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from roles.apis.examples import ExampleResultOutput
from roles.apis.roles import ROLE_CODES, ROLE_NAME, ROLE_UPDATE, role_input
from roles.decision.replay import CHANGES
from roles.registry import registry
from roles.services.replay import BAD_WINDOW, role_replay

REPLAY_INPUT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "draft": {
            **copy.deepcopy(ROLE_UPDATE),
            "description": "The changes, as PATCH /api/roles/{name}/ takes them.",
        },
        "since": {"type": ["string", "null"], "format": "date-time"},
        "until": {"type": ["string", "null"], "format": "date-time"},
    },
}


class ReplayExampleOutput(serializers.Serializer):
    audit_id = serializers.IntegerField(help_text="The recorded decision's audit row.")
    at = serializers.DateTimeField(allow_null=True)
    session = serializers.CharField()
    target = serializers.CharField()
    recorded = serializers.ChoiceField(choices=["allow", "ask", "deny"])
    recorded_code = serializers.CharField()
    decision = serializers.CharField(help_text="allow, ask, deny, or empty when not replayable")
    code = serializers.CharField()
    reason = serializers.CharField()


class ReplayGroupOutput(serializers.Serializer):
    change = serializers.ChoiceField(choices=list(CHANGES))
    tool = serializers.CharField()
    recorded_rule = serializers.CharField()
    rule = serializers.CharField(help_text="The draft's deciding rule.")
    reason = serializers.CharField(help_text="Why not replayable.")
    count = serializers.IntegerField()
    examples = ReplayExampleOutput(many=True)


class ReasonCountOutput(serializers.Serializer):
    reason = serializers.CharField()
    count = serializers.IntegerField()


class DiffFindingOutput(serializers.Serializer):
    dimension = serializers.CharField(
        help_text="effective_permissions, effective_tools, write_paths, command_rules, "
        "argument_limits, mcp_servers, budgets, answer_sets_plan, protected, entered_from"
    )
    what = serializers.CharField()
    exact = serializers.BooleanField(
        help_text="False: not provably narrower, so counted as a gain (conservative)."
    )
    counterexample = serializers.DictField(
        help_text="kind call (tool, arguments, old, new: decided with both versions), change "
        "(path, change), argv, effect, budget, server or transition; {} when none was found."
    )
    text = serializers.CharField()


class PolicyDiffOutput(serializers.Serializer):
    role = serializers.CharField()
    widens = serializers.BooleanField(help_text="Whether the draft grants anything new.")
    gains = DiffFindingOutput(many=True, help_text="What the draft allows that the role did not.")
    narrowings = DiffFindingOutput(
        many=True, help_text="What the role allowed that the draft does not."
    )
    changed = serializers.ListField(
        child=serializers.CharField(),
        help_text="Fields that changed without changing on their own what the role may do.",
    )


class ReplayOutput(serializers.Serializer):
    role = serializers.CharField()
    since = serializers.DateTimeField(allow_null=True)
    until = serializers.DateTimeField(allow_null=True)
    decisions = serializers.IntegerField()
    replayed = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    allowed_to_denied = serializers.IntegerField()
    denied_to_allowed = serializers.IntegerField()
    to_or_from_asked = serializers.IntegerField(help_text="Calls going to or from ask.")
    not_replayable = serializers.IntegerField()
    not_replayable_reasons = ReasonCountOutput(many=True)
    groups = ReplayGroupOutput(many=True)
    examples_failing = ExampleResultOutput(many=True)
    diff = PolicyDiffOutput(help_text="What the draft grants and takes, with counterexamples.")
    diff_below = PolicyDiffOutput(
        many=True, help_text="The same for each role below it whose access moves."
    )


def window_time(value: Any, name: str) -> datetime | None:
    """An ISO 8601 time (UTC when it names no zone), in UTC, or ACODE-ROL-014.

    In UTC, because a database need not take every offset ISO 8601 allows (PostgreSQL
    stops at 15:59)."""
    if value in (None, ""):
        return None
    try:  # None for a malformed time; ValueError for a well-formed impossible one (12:99)
        parsed = parse_datetime(value) if isinstance(value, str) else None
        if parsed is not None:  # OverflowError: before year 1 or after 9999 once in UTC
            return (make_aware(parsed, UTC) if is_naive(parsed) else parsed).astimezone(UTC)
    except (ValueError, OverflowError):
        pass
    raise AcodeError(
        BAD_WINDOW, f"`{name}` is not an ISO 8601 time: {str(value)[:100]!r}.", {"field": name}
    )


class RoleReplayApi(APIView):
    """Replay a role's recorded decisions under a draft of it; write nothing."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request={"application/json": copy.deepcopy(REPLAY_INPUT)},
        responses={200: ReplayOutput, **error_responses(*ROLE_CODES, BAD_WINDOW)},
        parameters=[ROLE_NAME],
        description="Preview a change: the role's recorded tool decisions in the window "
        "decided again under the draft (the role with `draft` over it). Counts of what "
        "would change, grouped by tool and rule with examples linked to audit rows; "
        "decisions that depended on something not recorded are counted per reason, not "
        "guessed. Failing examples of the draft are listed, and the policy diff: what the "
        "draft allows that the role did not and the other way round, each with a "
        "counterexample (also what no recorded call exercised). Nothing is written.",
        operation_id="roles_replay",
    )
    def post(self, request: Request, name: str) -> Response:
        if not request.user.has_perm("roles.change_role"):
            raise PermissionDenied("Previewing a role change needs the change_role permission.")
        role = registry.get(name)
        body = request.data
        if (
            not isinstance(body, dict)
            or set(body) - {"draft", "since", "until"}
            or not isinstance(body.get("draft", {}), dict)
        ):
            raise AcodeError(
                "ACODE-ROL-004",
                "The body is a JSON object with `draft` (the changes), `since` and `until`.",
                {"fields": sorted(body) if isinstance(body, dict) else []},
            )
        draft = role_input(body.get("draft") or {}, ROLE_UPDATE)
        since = window_time(body.get("since"), "since")
        until = window_time(body.get("until"), "until")
        return Response(role_replay(slug=role.slug, data=draft, since=since, until=until))
