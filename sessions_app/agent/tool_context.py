"""What a job's tools reach beyond the model: its workspace, and the services that record
a change, approve or request changes, and ask a person, each on the job's behalf."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings

from sessions_app.agent.mcp.servers import JobMcpServers
from sessions_app.agent.toolkit import ReviewState, ToolContext
from sessions_app.containment import (
    LayerLimits,
    RecordedWrite,
    kernel_guards_overlay_xattrs,
    session_layer_path,
    tracked_paths,
)
from sessions_app.models import AgentSession, Job, JobEventKind
from sessions_app.services.applies import SessionJournal, workspace_apply_resume
from sessions_app.services.backlog_pm import pm_propose
from sessions_app.services.changes import (
    PendingSnapshot,
    change_track,
    changes_approve,
    changes_check_digest,
    pending_snapshot,
)
from sessions_app.services.delegation import (
    delegation_ask_parent,
    delegation_collect,
    delegation_start,
)
from sessions_app.services.jobs import job_event
from sessions_app.services.memory import remembered_question_for
from sessions_app.services.runs import run_question_ask, run_review_record
from sessions_app.services.tracking import PATH_MAX_CHARS
from sessions_app.services.workspaces import (
    attached_git_dir,
    session_git_dir,
    workspace_writer,
)


def run_of(job: Job) -> Any:
    """The run whose stage the job is (None for a job of its own): while that run executes,
    it is the one that may change the session (``permissions.action_refusal``)."""
    return job.run_stage.run_id if job.run_stage is not None else None


def layer_limits() -> LayerLimits:
    """What a command's layer may hold here (settings), and how its overlay is read."""
    return LayerLimits(
        settings.ACODE_LAYER_MAX_BYTES,
        settings.ACODE_LAYER_MAX_ENTRIES,
        # bwrap mounts the overlay in the user namespace it makes: "userxattr".
        prefix="user.overlay.",
        guarded=kernel_guards_overlay_xattrs(),
        max_path=PATH_MAX_CHARS,
    )


def _ask(job: Job, session: AgentSession, asked: list[str], question: str) -> str | None:
    """Put a question to a person (the run pauses), unless one answered it before in this
    session and role (decision memory): then that answer, now."""
    remembered = remembered_question_for(session=session, role=job.role.slug, question=question)
    if remembered is not None:
        said = f"answered before by {remembered.answered_by_name}"
        job_event(job, JobEventKind.NOTE, {"message": said, "question": question,
                                           "remembered": remembered.pk})  # fmt: skip
        return f"A person ({said}): {remembered.note}"
    run_question_ask(job=job, question=question)
    asked.append(question)
    job_event(job, JobEventKind.NOTE, {"message": "asked a person", "question": question})
    return None


def _ask_parent(job: Job, asked: list[str], question: str) -> None:
    """A sub-agent's question goes to its parent agent first (it ends blocked with it)."""
    delegation_ask_parent(job=job, question=question)
    asked.append(question)


def _asker(job: Job, session: AgentSession, asked: list[str]) -> Callable[[str], str | None] | None:
    """Who a job's ``ask_human`` asks: a sub-agent its parent, a run's stage a person
    (the run pauses); any other job nobody (None)."""
    if job.parent_id is not None:
        return partial(_ask_parent, job, asked)
    return partial(_ask, job, session, asked) if job.run_stage_id is not None else None


def _delegate(job: Job, role: str, task: str, llm_calls: int | None) -> str:
    return str(delegation_start(parent=job, role=role, task=task, llm_calls=llm_calls).pk)


def _collect(job: Job, jobs: list[str] | None, timeout: float) -> list[dict[str, Any]]:
    return delegation_collect(parent=job, jobs=jobs, timeout=timeout)


def _propose(job: Job, session: AgentSession, document: dict[str, Any]) -> list[tuple[str, str]]:
    """Proposed by the job's role, to the project its session plans (``pm_propose``)."""
    created = pm_propose(session=session, document=document, actor=f"job:{str(job.pk)[:8]}",
                         proposed_by=job.role.slug)  # fmt: skip
    return [(task.key, task.status) for task in created]


def tool_context(
    job: Job, session: AgentSession, asked: list[str], shown: PendingSnapshot | None = None
) -> ToolContext:
    """The job's tool context; a question put to a person is appended to ``asked``.
    ``shown``: the pending changes the job's context showed the model (read now if None)."""
    shown, actor, run_id = shown or pending_snapshot(session), f"job:{str(job.pk)[:8]}", run_of(job)

    def record_change(write: RecordedWrite) -> None:
        change_track(session=session, write=write, actor=actor, run_id=run_id)

    def approve(summary: str, digest: str) -> int:
        if job.run_stage_id is not None:  # in a run, the run commits (or its gate does)
            changes_check_digest(session, digest)
            run_review_record(
                job=job, verdict="approve", summary=summary, comments=[], digest=digest
            )
            return session.pending_changes.count()
        done = changes_approve(session=session, digest=digest, summary=summary, actor=actor)
        return done.approved

    def request_changes(summary: str, comments: list[Any]) -> None:
        if job.run_stage_id is not None:
            run_review_record(
                job=job, verdict="request_changes", summary=summary, comments=comments
            )
        job_event(
            job,
            JobEventKind.NOTE,
            {"message": "revision requested", "summary": summary, "comments": comments},
        )

    layers = Path(settings.ACODE_LAYERS_ROOT)
    workspace_apply_resume(session, layers)  # what a dead attempt left half applied, first
    git_dir = session_git_dir(session)
    return ToolContext(
        workspace=Path(session.workspace),
        writer=workspace_writer(session),
        layers_root=layers,
        git_dir=git_dir,
        journal=SessionJournal(session, actor, run_id),
        session_layer=session_layer_path(layers, str(session.pk)),
        layer_limits=layer_limits(),
        tracked=lambda: tracked_paths(git_dir or attached_git_dir(session)),
        pending_diffs=shown.diffs,
        review=ReviewState(shown=shown.digest, current=shown.digest),
        record_change=record_change,
        approve_changes=approve,
        request_changes=request_changes,
        ask_human=_asker(job, session, asked),
        delegate=partial(_delegate, job),
        collect=partial(_collect, job),
        propose_backlog=partial(_propose, job, session),
        command_timeout=settings.ACODE_TOOL_TIMEOUT,
        mcp=JobMcpServers(workspace=Path(session.workspace), actor=actor),
    )
