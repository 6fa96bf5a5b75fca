"""Input and output shapes of sessions, transitions, plans and pending changes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from acode.inputs import Input, PageQuery, Text
from roles.registry import registry
from roles.selectors import role_version_number
from sessions_app.containment import FILE_NAME_PATTERN
from sessions_app.models import (
    SETTABLE_STATUSES,
    AgentSession,
    ChangeKind,
    PendingChange,
    Repository,
    RiskTier,
    RoleTransition,
    SessionStatus,
    StepStatus,
)
from sessions_app.services import plans

# Text limits of the API (plans: sessions_app.services.plans).
TITLE_MAX_CHARS = 200
TASK_MAX_CHARS = 20_000
REASON_MAX_CHARS = 2_000
ROLE_NAME_MAX_CHARS = 100
PATH_MAX_CHARS = 1_000
DIFF_MAX_CHARS = 1_000_000
SUMMARY_MAX_CHARS = 5_000
DIGEST_MAX_CHARS = 64
# The pending changes' digest, sent with their list: what an approval of them names.
CHANGES_DIGEST_HEADER = "Acode-Changes-Digest"


class RoleRefOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    colour = serializers.CharField()


class PlanStepOutput(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    detail = serializers.CharField()
    files = serializers.ListField(child=serializers.CharField())
    depends_on = serializers.ListField(child=serializers.IntegerField())
    acceptance = serializers.ListField(
        child=serializers.CharField(),
        default=list,
        help_text="What a reviewer checks the step against (the Planner's, or a person's).",
    )
    status = serializers.ChoiceField(choices=StepStatus.choices)


def _iso(moment: Any) -> str | None:
    """Datetimes as DRF renders them (ISO 8601, ``Z`` for UTC)."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def role_ref(role_id: int) -> dict[str, str]:
    """A role as shown on sessions: from the registry, no query."""
    role = registry.by_id(role_id)
    return {"slug": role.slug, "name": role.name, "colour": role.spec.colour}


def version_number(obj: Any, role_id: int | None, version_id: int | None) -> int | None:
    """The role version number an object pins; the registry knows the current ones."""
    if version_id is None or role_id is None:
        return None
    role = registry.by_id(role_id)
    if role.version_id == version_id:
        return role.version
    cached = obj._state.fields_cache.get("role_version")
    if cached is not None:
        return int(cached.number)
    return role_version_number(version_id)


class SessionOutput(serializers.ModelSerializer):
    current_role = serializers.SerializerMethodField()
    role_version = serializers.SerializerMethodField()
    owner = serializers.CharField(source="owner.username")
    plan = PlanStepOutput(many=True)
    plan_progress = serializers.SerializerMethodField()
    repository: serializers.SlugRelatedField[Repository] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )

    class Meta:
        model = AgentSession
        fields = [
            "id",
            "title",
            "task",
            "owner",
            "workspace",
            "workspace_managed",
            "repository",
            "branch",
            "current_role",
            "role_version",
            "role_since",
            "last_reason",
            "plan",
            "plan_progress",
            "risk_tier",
            "status",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(RoleRefOutput)
    def get_current_role(self, obj: AgentSession) -> dict[str, str]:
        return role_ref(obj.current_role_id)

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_role_version(self, obj: AgentSession) -> int | None:
        return version_number(obj, obj.current_role_id, obj.role_version_id)

    def get_plan_progress(self, obj: AgentSession) -> dict[str, int]:
        done = sum(1 for s in obj.plan if s.get("status") in (StepStatus.DONE, StepStatus.SKIPPED))
        return {"done": done, "total": len(obj.plan)}

    def to_representation(self, instance: AgentSession) -> dict[str, Any]:
        # Hot path (every transition answers with the session): build the dict directly
        # instead of instantiating a ModelSerializer's fields per call. The declared
        # fields above still describe it in the OpenAPI schema; a test keeps them equal.
        return {
            "id": str(instance.id),
            "title": instance.title,
            "task": instance.task,
            "owner": instance.owner.username,
            "workspace": instance.workspace,
            "workspace_managed": instance.workspace_managed,
            "repository": instance.repository.name if instance.repository is not None else None,
            "branch": instance.branch,
            "current_role": self.get_current_role(instance),
            "role_version": self.get_role_version(instance),
            "role_since": _iso(instance.role_since),
            "last_reason": instance.last_reason,
            "plan": list(instance.plan or []),
            "plan_progress": self.get_plan_progress(instance),
            "risk_tier": instance.risk_tier,
            "status": instance.status,
            "created_at": _iso(instance.created_at),
            "updated_at": _iso(instance.updated_at),
        }


class SessionCreateInput(Input):
    title = Text(max_length=TITLE_MAX_CHARS)
    task = Text(max_length=TASK_MAX_CHARS, required=False, allow_blank=True, default="")
    repository = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        max_length=100,
        help_text="A registered repository to clone (GET /api/repositories/); empty: an "
        "empty git repository.",
    )
    workspace = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        max_length=1000,
        help_text="Attach an existing server directory instead (needs attach_workspace).",
    )
    risk_tier = serializers.ChoiceField(choices=RiskTier.choices, default=RiskTier.LOW)


class SessionListQuery(PageQuery):
    """The session list's filters (``sessions_app.filters.SessionFilter`` applies them)."""

    role = Text(
        max_length=ROLE_NAME_MAX_CHARS, required=False, help_text="Current role (slug or name)"
    )
    status = serializers.ChoiceField(choices=SessionStatus.choices, required=False)
    owner = Text(max_length=150, required=False, help_text="Owner username")
    q = Text(
        max_length=TITLE_MAX_CHARS, required=False, help_text="Text in title, task or last reason"
    )


class SessionPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = SessionOutput(many=True)


class RepositoryOutput(serializers.ModelSerializer):
    class Meta:
        model = Repository
        fields = ["name", "description", "default_branch"]


class SessionUpdateInput(Input):
    title = Text(max_length=TITLE_MAX_CHARS, required=False)
    task = Text(max_length=TASK_MAX_CHARS, required=False, allow_blank=True)
    risk_tier = serializers.ChoiceField(choices=RiskTier.choices, required=False)
    status = serializers.ChoiceField(
        choices=SETTABLE_STATUSES,
        required=False,
        help_text="active, paused or completed. Archiving frees the session's files and "
        "makes it read-only: POST /api/sessions/{id}/archive/ (and /restore/).",
    )


class TransitionInput(Input):
    to_role = Text(max_length=ROLE_NAME_MAX_CHARS)
    # Blank is the service's refusal to make (ACODE-ROL-007); trimming makes a reason of
    # zero-width spaces blank.
    reason = Text(max_length=REASON_MAX_CHARS, allow_blank=True, visible=True)
    expected_role = Text(
        max_length=ROLE_NAME_MAX_CHARS,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="The role the client believes the session is in. If the session has moved "
        "on, the answer is 409 ACODE-ROL-006 and nothing is written. Stated by the session's "
        "owner, it also lets PostgreSQL make the change in one round trip.",
    )


class TransitionOutput(serializers.ModelSerializer):
    from_role = serializers.SerializerMethodField()
    to_role = serializers.SerializerMethodField()
    role_version = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_from_role(self, obj: RoleTransition) -> str | None:
        return registry.by_id(obj.from_role_id).slug if obj.from_role_id else None

    @extend_schema_field(OpenApiTypes.STR)
    def get_to_role(self, obj: RoleTransition) -> str:
        return registry.by_id(obj.to_role_id).slug

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_role_version(self, obj: RoleTransition) -> int | None:
        return version_number(obj, obj.to_role_id, obj.role_version_id)

    def to_representation(self, instance: RoleTransition) -> dict[str, Any]:
        return {
            "seq": instance.seq,
            "from_role": self.get_from_role(instance),
            "to_role": self.get_to_role(instance),
            "role_version": self.get_role_version(instance),
            "reason": instance.reason,
            "actor": instance.actor,
            "request_id": instance.request_id,
            "created_at": _iso(instance.created_at),
        }

    class Meta:
        model = RoleTransition
        fields = [
            "seq",
            "from_role",
            "to_role",
            "role_version",
            "reason",
            "actor",
            "request_id",
            "created_at",
        ]


class TransitionResultOutput(serializers.Serializer):
    changed = serializers.BooleanField()
    message = serializers.CharField()
    transition = TransitionOutput(allow_null=True)
    session = SessionOutput()
    available_permissions = serializers.ListField(
        child=serializers.CharField(),
        help_text="What the session's role (after this call) may do: its effective permissions.",
    )


class AllowedTransitionOutput(serializers.Serializer):
    to_role = serializers.CharField()
    to_role_name = serializers.CharField()
    precondition = serializers.CharField()
    condition = serializers.CharField()
    allowed_now = serializers.BooleanField()
    unmet = serializers.CharField()
    suggested_for = serializers.ListField(
        child=serializers.CharField(),
        help_text="The target custom agent's routing keywords that the session's title or "
        "task names: the agent is suggested for this task (empty: not suggested).",
    )


class PlanStepInput(Input):
    """A plan step: an object, or just its title as a string."""

    title = Text(max_length=plans.MAX_TITLE_CHARS)
    detail = Text(max_length=plans.MAX_DETAIL_CHARS, required=False, allow_blank=True)
    files = serializers.ListField(
        child=Text(max_length=plans.MAX_PATH_CHARS),
        max_length=plans.MAX_FILES_PER_STEP,
        required=False,
    )
    depends_on = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=plans.MAX_STEPS),
        max_length=plans.MAX_STEPS,
        required=False,
    )
    acceptance = serializers.ListField(
        child=Text(max_length=plans.MAX_CRITERION_CHARS),
        max_length=plans.MAX_CRITERIA,
        required=False,
        help_text="The step's acceptance criteria, which its review is asked to check.",
    )
    status = serializers.ChoiceField(choices=StepStatus.choices, required=False)

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value({"title": data} if isinstance(data, str) else data)


class PlanSteps(serializers.ListSerializer):
    """The steps of a plan: each an object, or just its title (the schema shows both)."""


class PlanStepsExtension(OpenApiSerializerFieldExtension):
    """A plan step is an object or a string, its title (``PlanStepInput``)."""

    target_class = PlanSteps

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        child = self.target.child
        step = auto_schema.resolve_serializer(child, direction).ref
        title = auto_schema._map_serializer_field(child.fields["title"], direction)
        return {
            "type": "array",
            "items": {"oneOf": [step, title]},
            "maxItems": self.target.max_length,
        }


class PlanInput(Input):
    steps = PlanSteps(child=PlanStepInput(), allow_empty=True, max_length=plans.MAX_STEPS)


class StepStatusInput(Input):
    status = serializers.ChoiceField(choices=StepStatus.choices)


class PendingChangeOutput(serializers.ModelSerializer):
    role = serializers.CharField(source="role.slug", allow_null=True, default=None)

    class Meta:
        model = PendingChange
        fields = ["path", "kind", "diff", "role", "created_at", "updated_at"]


class PendingChangeInput(Input):
    # Not trimmed: the service judges the name as sent (a control character at either end
    # is refused, not trimmed away).
    path = Text(max_length=PATH_MAX_CHARS, pattern=FILE_NAME_PATTERN, trim_whitespace=False)
    kind = serializers.ChoiceField(choices=ChangeKind.choices)
    diff = Text(max_length=DIFF_MAX_CHARS, allow_blank=True, default="", trim_whitespace=False)


class ApproveInput(Input):
    digest = Text(
        max_length=DIGEST_MAX_CHARS,
        help_text="The digest of the pending changes you reviewed and approve: the "
        f"{CHANGES_DIGEST_HEADER} header of GET /api/sessions/{{id}}/changes/. When the "
        "pending changes differ, nothing is committed (409 ACODE-CHG-002).",
    )
    summary = Text(max_length=SUMMARY_MAX_CHARS, required=False, allow_blank=True, default="")


class ApproveOutput(serializers.Serializer):
    approved = serializers.IntegerField(help_text="How many pending changes were approved.")
    commit = serializers.CharField(help_text="The commit made on the session branch ('' none).")
    branch = serializers.CharField(help_text="Its branch ('' when nothing was committed).")
    outcome = serializers.CharField(
        help_text="What the approval did, in words: committed (where), or why not (an "
        "attached directory already holds the changes; nothing to commit)."
    )
