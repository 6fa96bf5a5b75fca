"""Starting a run: check the request, assess its risk, pick its template, enter Default and
let the engine start the first stage."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from acode.error_codes import MODEL_FAILURE_CODES
from acode.errors import AcodeError
from acode.inputs import is_blank
from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    AuditEventType,
    RiskTier,
    Run,
    RunStatus,
    StagePurpose,
    WorkflowTemplate,
)
from sessions_app.permissions import SessionAction, action_check
from sessions_app.services.audit import actor_name, audit_record
from sessions_app.services.event_catalog import EventKind
from sessions_app.services.jobs import require_broker
from sessions_app.services.locks import lock_session
from sessions_app.services.runs.engine import advance, publish_run, reviewer_refusal
from sessions_app.services.runs.stages import (
    MAX_REQUEST_CHARS,
    RiskInput,
    gate_required_for,
    risk_assess,
    risk_of,
)
from sessions_app.services.transitions import session_transition


def failed_runs(session: AgentSession) -> int:
    """Earlier runs whose work failed; a run the model failed (a loop, a budget, an answer
    it could not give) says nothing about the work, so it does not count."""
    return (
        session.runs.filter(status__in=[RunStatus.FAILED, RunStatus.BLOCKED])
        .exclude(error_code__in=MODEL_FAILURE_CODES)
        .count()
    )


def template_for(tier: str, slug: str | None = None) -> WorkflowTemplate:
    """The template a run uses: the one named, else the first enabled one for the tier."""
    found = (
        WorkflowTemplate.objects.filter(slug=slug).first()
        if slug
        else WorkflowTemplate.objects.filter(risk_tier=tier, enabled=True).order_by("name").first()
    )
    if found is None or not found.enabled:
        known = list(WorkflowTemplate.objects.filter(enabled=True).values_list("slug", flat=True))
        what = f"named {slug!r}" if slug else f"for {tier} risk"
        raise AcodeError(
            "ACODE-RUN-001",
            f"There is no enabled workflow template {what}.",
            {"template": slug, "tier": tier, "known": known},
        )
    if not found.stages.exists():
        raise AcodeError(
            "ACODE-API-409", f"Workflow template {found.slug!r} has no stages.", {"template": slug}
        )
    return found


def template_chosen(
    *, request: str, declared: str, template: str | None = None, failed: int = 0
) -> tuple[WorkflowTemplate, list[dict[str, Any]]]:
    """The template a run of ``request`` declared ``declared`` uses (``template_for`` the
    tier its request's risk signals reach, unless one is named) and the signals that fired.
    ``run_start`` asks it; so does the backlog's scheduler, to count the queue of the
    first stage before it starts a task."""
    fired = risk_assess(RiskInput(request=request, failed_runs=failed), where="request")
    return template_for(risk_of(declared, fired).tier, template), fired


def _declared_tier(request: str, risk: str | None) -> str:
    if not request or is_blank(request):
        raise AcodeError("ACODE-API-400", "A run needs a non-blank request.", {"field": "request"})
    if len(request) > MAX_REQUEST_CHARS:
        raise AcodeError(
            "ACODE-API-400",
            f"A run's request has at most {MAX_REQUEST_CHARS} characters.",
            {"field": "request"},
        )
    declared = risk or RiskTier.LOW
    if declared not in RiskTier.values:
        raise AcodeError(
            "ACODE-API-400",
            f"Unknown risk tier {declared!r}.",
            {"field": "risk", "allowed": list(RiskTier.values)},
        )
    return declared


@transaction.atomic
def run_start(
    *,
    session: AgentSession,
    request: str,
    user: User | None = None,
    actor: str | None = None,
    risk: str | None = None,
    template: str | None = None,
) -> Run:
    """Start a run of the request in the session (from Default) and queue its first stage.

    The effective risk is scored from ``risk`` (declared; default low) and the signals
    that fire on the request and the session (``stages.risk_of``); it picks the template
    unless one is named, and the template's autonomy (no approval gate) scores too. A
    template that requires a review by a model other than the Coder's and has none
    refuses the run (ACODE-RUN-013) before anything is written.
    """
    declared = _declared_tier(request, risk)
    require_broker()  # refused with 503 before anything is written: submit it again at once
    with lock_session(session.pk) as locked:
        action_check(SessionAction.RUN_START, session=locked, user=user)
        chosen, fired = template_chosen(
            request=request, declared=declared, template=template, failed=failed_runs(locked)
        )
        refusal = reviewer_refusal(chosen)  # a different reviewer, when the template asks
        if refusal is not None:
            raise refusal
        fired += _autonomy(chosen)
        scored = risk_of(declared, fired)
        who = actor_name(user, actor)
        run = Run.objects.create(
            session=locked,
            template=chosen,
            request=request.strip(),
            declared_tier=declared,
            effective_tier=scored.tier,
            risk_score=scored.score,
            signals=fired,
            gate_required=gate_required_for(scored, chosen),
            max_llm_calls=chosen.max_llm_calls,
            max_tokens=chosen.max_tokens,
            max_seconds=chosen.max_seconds,
            started_by=user if user is not None and user.is_authenticated else None,
            created_by=who,
        )
        default = registry.default()
        if locked.current_role_id != default.id:
            session_transition(
                session=locked, to_role=default.slug, reason="Starting a run", actor=who
            )
        locked.active_run = run
        locked.save(update_fields=["active_run", "updated_at"])
        _audit_start(run, locked, who)
        publish_run(run, EventKind.RUN_STARTED)
        advance(run, locked)
    return run


def _autonomy(template: WorkflowTemplate) -> list[dict[str, Any]]:
    """The autonomy signal: the run's template commits without a person approving."""
    if template.stages.filter(purpose=StagePurpose.APPROVAL).exists():
        return []
    return risk_assess(RiskInput(unattended=template.name), where="template")


def _audit_start(run: Run, session: AgentSession, who: str) -> None:
    audit_record(
        event_type=AuditEventType.RUN_EVENT,
        actor=who,
        session=session,
        role=registry.default().slug,
        target=f"run {run.pk}",
        result="started",
        details={
            "template": run.template.slug,
            "declared_tier": run.declared_tier,
            "effective_tier": run.effective_tier,
            "risk_score": run.risk_score,
            "signals": run.signals,
            "request": run.request[:500],
        },
    )
