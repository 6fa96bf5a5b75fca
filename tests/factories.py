"""Small builders for test data, going through the same services as users do; a run's
history (``make_run``, ``make_stage``) is written as the engine leaves it, for the
selectors that read it."""

from __future__ import annotations

from typing import Any

from roles.models import Permission, Role, Tool
from roles.services import role_saved
from sessions_app.models import Job, Run, RunStage, WorkflowTemplate


def make_role(
    slug: str,
    *,
    name: str | None = None,
    permissions: list[str] = (),  # type: ignore[assignment]
    allowed_tools: list[str] = (),  # type: ignore[assignment]
    parent: Role | None = None,
    **fields: Any,
) -> Role:
    role = Role.objects.create(
        slug=slug,
        name=name or slug.replace("-", " ").title(),
        prompt_key=fields.pop("prompt_key", slug),
        parent=parent,
        **fields,
    )
    role.permissions.set(Permission.objects.filter(code__in=permissions))
    role.allowed_tools.set(Tool.objects.filter(name__in=allowed_tools))
    role_saved(role=role, actor="test")
    return role


def make_template(
    slug: str, *, name: str | None = None, risk_tier: str = "low"
) -> WorkflowTemplate:
    """A workflow template without stages (a seeded run history needs only its name)."""
    return WorkflowTemplate.objects.create(
        slug=slug, name=name or slug.title(), risk_tier=risk_tier
    )


def make_run(
    session: Any, template: WorkflowTemplate, *, request: str = "Change something", **fields: Any
) -> Run:
    """A run as the engine leaves it, without running it: its stages come from ``make_stage``."""
    fields.setdefault("status", "succeeded")
    return Run.objects.create(
        session=session, template=template, request=request, declared_tier=template.risk_tier,
        effective_tier=template.risk_tier, max_llm_calls=200, max_tokens=2_000_000,
        max_seconds=7200, created_by=session.owner.username, **fields,
    )  # fmt: skip


def make_stage(
    run: Any,
    purpose: str,
    *,
    role: str,
    model: str = "",
    step: int = 1,
    status: str = "succeeded",
    evidence: dict[str, Any] | None = None,
    verdict: dict[str, Any] | None = None,
) -> RunStage:
    """A run's next stage as the engine records it, with its job (in ``role``, answered by
    ``model``) in the same final state."""
    seq = run.stages.count() + 1
    job_status = {"succeeded": "succeeded", "failed": "failed"}.get(status, "running")
    role_row = Role.objects.get(slug=role)
    stage = RunStage.objects.create(
        run=run, seq=seq, position=seq, purpose=purpose, role=role_row, plan_step=step,
        status=status, evidence=evidence or {}, verdict=verdict or {},
    )  # fmt: skip
    stage.job = Job.objects.create(
        session=run.session, role=role_row, request=f"stage {seq}", status=job_status,
        model=model, created_by="orchestrator", run_stage=stage,
    )  # fmt: skip
    stage.save(update_fields=["job"])
    return stage
