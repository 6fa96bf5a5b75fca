"""Shapes of backlog projects, epics and tasks."""

from __future__ import annotations

from rest_framework import serializers

from acode.inputs import Input, Text
from sessions_app.models import BacklogProject, BacklogTask, RiskTier, TaskPriority


class ProjectOutput(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username")
    repository = serializers.CharField(source="repository.name", allow_null=True, default=None)
    pm_session = serializers.UUIDField(
        source="pm_session_id", allow_null=True, help_text="The Product Manager's session."
    )
    pm_job = serializers.UUIDField(
        source="pm_job_id", allow_null=True, help_text="The Product Manager's latest job."
    )
    pm_job_status = serializers.CharField(source="pm_job.status", allow_null=True, default=None)

    class Meta:
        model = BacklogProject
        fields = [
            "slug",
            "title",
            "description",
            "owner",
            "repository",
            "max_concurrent_runs",
            "run_risk",
            "max_task_attempts",
            "reassign_template",
            "integration_branch",
            "integration_pushed",
            "auto_accept_proposals",
            "pm_session",
            "pm_job",
            "pm_job_kind",
            "pm_job_status",
            "created_at",
        ]


class ProjectCreateInput(Input):
    slug = serializers.SlugField(max_length=64)
    title = Text(max_length=200)
    description = Text(max_length=20000, required=False, allow_blank=True, default="")
    repository = Text(
        max_length=100, required=False, allow_blank=True, default="",
        help_text="A registered repository's name (empty: each task starts an empty one).",
    )  # fmt: skip
    max_concurrent_runs = serializers.IntegerField(min_value=0, max_value=100, default=2)
    run_risk = serializers.ChoiceField(choices=RiskTier.choices, default=RiskTier.MEDIUM)
    max_task_attempts = serializers.IntegerField(min_value=1, max_value=10, default=2)
    reassign_template = serializers.SlugField(required=False, allow_blank=True, default="")
    integration_branch = Text(max_length=200, default="acode/integration")
    auto_accept_proposals = serializers.BooleanField(default=False)


class TaskOutput(serializers.ModelSerializer):
    project = serializers.CharField(source="project.slug")
    epic = serializers.CharField(source="epic.key", allow_null=True, default=None)
    depends_on = serializers.SerializerMethodField()
    run = serializers.UUIDField(source="run_id", allow_null=True)
    run_status = serializers.CharField(source="run.status", allow_null=True, default=None)
    session = serializers.UUIDField(source="session_id", allow_null=True)

    class Meta:
        model = BacklogTask
        fields = [
            "project",
            "epic",
            "key",
            "title",
            "description",
            "acceptance_criteria",
            "priority",
            "depends_on",
            "template",
            "status",
            "reason",
            "waiting",
            "conflict",
            "attempts",
            "blocked_runs",
            "run",
            "run_status",
            "session",
            "merged_commit",
            "proposed_by",
            "created_by",
            "created_at",
            "updated_at",
        ]

    def get_depends_on(self, obj: BacklogTask) -> list[str]:
        return [d.key for d in obj.depends_on.all()]


class ProjectDetailOutput(ProjectOutput):
    tasks = TaskOutput(many=True, source="tasks.all")
    integration_head = serializers.SerializerMethodField()

    class Meta(ProjectOutput.Meta):
        fields = [*ProjectOutput.Meta.fields, "integration_head", "tasks"]

    def get_integration_head(self, obj: BacklogProject) -> str:
        return str(self.context.get("integration_head", ""))


class TaskPriorityInput(Input):
    priority = serializers.ChoiceField(choices=TaskPriority.choices)


class TaskNoteInput(Input):
    note = Text(required=False, allow_blank=True, default="", max_length=2000)


class TaskRejectInput(Input):
    reason = Text(
        min_length=1, max_length=1000, help_text="Why the proposal is rejected (kept on the task)."
    )


class BacklogImportOutput(serializers.Serializer):
    created = TaskOutput(many=True)


class ProjectPlanInput(Input):
    spec = Text(max_length=20000, help_text="The product spec the Product Manager plans from.")


class ProjectPlanOutput(serializers.Serializer):
    session = serializers.UUIDField(source="session_id")
    job = serializers.UUIDField(source="pk")
    status = serializers.CharField()
    kind = serializers.CharField(default="plan")
