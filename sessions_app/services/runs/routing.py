"""Which model endpoint a run's stage asks (issue 39; spec 003: a blocked task "reassigns to
a different agent/model", and "assigns a different engineer as reviewer").

- A stage asks its template stage's model, else its role's preferred model ("": the
  settings' default endpoint, named ``default`` here). A plan step's later Coder stages keep
  the model its Coder was moved to; the next step starts again from the template's.
- ``reassignment``: a step the Coder could not finish on its model (failing tests after the
  template's ``max_test_attempts``, a revision that changed nothing, tries that wrote
  nothing) moves to the next of the Coder role's ``reassign_models`` the step has not tried
  (``retries`` and the engine ask; attempts count again from there). None left: the run's
  existing path (blocked: a person decides; or failed fast).
- ``review_model``: a template with ``review_model_differs`` has each review asked of a model
  other than the one the Coder wrote the step with: the review stage's own, else the first of
  the Reviewer role's ``reassign_models`` that differs. ``reviewer_refusal`` is the check
  ``run_start`` makes before a run starts (ACODE-RUN-013); a review whose author was moved
  onto every such model ends the run with the same code.

Models are compared by endpoint name as templates and roles route them; a project's
``.acode/config.yml`` ``role_models`` (read by a job only for a role that names no model)
is not part of the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from acode.errors import AcodeError
from roles.registry import registry
from sessions_app.models import Run, RunStage, StagePurpose, WorkflowStage, WorkflowTemplate

DEFAULT = "default"  # what an empty model name routes to


def named(model: str) -> str:
    """A model endpoint's name as the run says it ("" is the default endpoint)."""
    return model or DEFAULT


def configured_model(stage: WorkflowStage) -> str:
    """The model a template stage routes to: its own, else its role's preferred one."""
    if stage.model or stage.role_id is None:
        return stage.model
    return registry.by_id(stage.role_id).spec.preferred_model


def _used(run: Run, stage: RunStage) -> str:
    """The model a run stage asked: where the run routed it, else its template stage's (its
    role's, should the template have lost that stage since)."""
    if stage.model:
        return stage.model
    template_stage = run.template.stages.filter(position=stage.position).first()
    if template_stage is not None:
        return configured_model(template_stage)
    return registry.by_id(stage.role_id).spec.preferred_model if stage.role_id else ""


def _coder_stages(run: Run, step: int) -> list[RunStage]:
    """The plan step's Coder stages, the latest first (``step`` 0: the whole run's)."""
    stages = run.stages.filter(purpose=StagePurpose.CODE)
    if step:
        stages = stages.filter(plan_step=step)
    return list(stages.order_by("-seq"))


@dataclass(frozen=True)
class Reassignment:
    """Where a blocked step moves: ``to`` the next model, ``away`` from the one it used."""

    to: str
    away: str

    def said(self, why: str) -> str:
        return f"reassigned to model {self.to} from {named(self.away)} after {why}"


def reassignment(run: Run, step: int) -> Reassignment | None:
    """The next of the Coder role's ``reassign_models`` the plan step has not tried, after
    the model its last Coder stage used; None when none is left."""
    coders = _coder_stages(run, step)
    if not step or not coders or coders[0].role_id is None:
        return None
    tried = {named(_used(run, stage)) for stage in coders}
    for name in registry.by_id(coders[0].role_id).spec.reassign_models:
        if named(name) not in tried:
            return Reassignment(to=name, away=_used(run, coders[0]))
    return None


def reassigned_at(stages: list[RunStage]) -> int:
    """The seq of the latest of ``stages`` (a step's, the latest first) where its Coder was
    moved to another model (0: never): attempts count again from there."""
    coders = [s for s in stages if s.purpose == StagePurpose.CODE]
    for newer, older in pairwise(coders):
        if newer.model != older.model:
            return newer.seq
    return 0


def stage_model(run: Run, template_stage: WorkflowStage, *, step: int, moved_to: str) -> str:
    """The model the run routes a stage it enters to ("": its template stage's or role's,
    as before): a Coder moved to ``moved_to`` or earlier in the step, or the reviewer a
    template requiring a different one gets."""
    if template_stage.purpose == StagePurpose.CODE:
        if moved_to:
            return moved_to
        coders = _coder_stages(run, step) if step else []
        return coders[0].model if coders else ""
    if template_stage.purpose == StagePurpose.REVIEW and run.template.review_model_differs:
        coders = _coder_stages(run, step) or _coder_stages(run, 0)
        if not coders:
            return ""  # nothing was written, so no author to differ from
        author = _used(run, coders[0])
        found = review_candidate(template_stage, author)
        if found is None:
            raise _no_other_reviewer(run.template, template_stage, author)
        return found
    return ""


def review_candidate(review: WorkflowStage, author: str) -> str | None:
    """The first model a review stage may ask that is not ``author``: its own (or its
    role's), else one of its role's ``reassign_models``; None when every one is the
    author's."""
    candidates = [configured_model(review)]
    if review.role_id is not None:
        candidates += registry.by_id(review.role_id).spec.reassign_models
    return next((name for name in candidates if named(name) != named(author)), None)


def reviewer_refusal(template: WorkflowTemplate) -> AcodeError | None:
    """Why a run of ``template`` may not start: it requires a review by a model other than
    the Coder's, and a review stage has none (None: it may start)."""
    if not template.review_model_differs:
        return None
    stages = list(template.stages.select_related("role").order_by("position"))
    coder = next((s for s in stages if s.purpose == StagePurpose.CODE), None)
    if coder is None:
        return None
    author = configured_model(coder)
    for review in stages:
        if review.purpose == StagePurpose.REVIEW and review_candidate(review, author) is None:
            return _no_other_reviewer(template, review, author)
    return None


def _no_other_reviewer(
    template: WorkflowTemplate, review: WorkflowStage, author: str
) -> AcodeError:
    own = named(configured_model(review))
    return AcodeError(
        "ACODE-RUN-013",
        f"The {template.name} workflow requires a review by a model other than the Coder's "
        f"({named(author)}), and its review stage (model {own}) has no other: give the review "
        "stage a model, or the Reviewer role a preferred or reassign model, that differs "
        "from the Coder's.",
        {
            "template": template.slug,
            "stage": review.position,
            "author_model": named(author),
            "review_model": own,
        },
    )
