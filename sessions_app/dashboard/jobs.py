"""The session page's jobs panel: the newest jobs and the live event stream of the last one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acode.workers import queue_has_consumer
from roles.registry import registry
from sessions_app.dashboard.formatting import (
    RoleBadge,
    Stamp,
    WaitingView,
    role_badge,
    stamp_of,
    waiting_view,
)
from sessions_app.models import Job, JobEventKind, JobStatus
from sessions_app.selectors.jobs import (
    job_denied_count,
    job_in_flight,
    job_newest_events,
    session_job,
    session_jobs_shown,
)
from sessions_app.services.delegation import escalation_words
from sessions_app.services.jobs import job_queue

JOB_LABELS = dict(JobStatus.choices)
JOB_EVENT_LABELS = dict(JobEventKind.choices)
JOBS_SHOWN = 5
JOB_EVENTS_SHOWN = 200
# Model output, tool arguments and results are cut to this in the stream.
DETAIL_CHARS = 400


@dataclass(frozen=True)
class JobEventView:
    seq: int
    kind: str
    label: str
    tone: str  # llm, tool, denied, result, status, limit, note
    summary: str
    detail: str
    at: Stamp


@dataclass(frozen=True)
class JobView:
    id: str
    short_id: str
    role: RoleBadge
    request: str
    status: str
    status_label: str
    live: bool
    llm_calls: int
    tokens: int
    model: str
    provider: str
    result: str
    error_code: str
    error_message: str
    created: Stamp
    events: list[JobEventView]
    denied: int
    unconsumed_queue: str  # a queued job's queue that no live worker consumes, else ""
    waiting: WaitingView | None = None  # what it waits on now, while it has not ended
    endpoint: str = ""  # a scripted job's endpoint name (its model is "scripted")
    parent: str = ""  # a sub-agent's (issue 41): the short id of the job that delegated it
    escalation: str = ""  # a block on its way up the chain (issue 41), in words
    resumed_from: str = ""  # the short id of the job that stopped at a limit and this continues
    resumable: bool = False  # stopped at a limit, outside a run and delegation: may resume


# Each describes one kind of job event as (tone, summary, detail).
Described = tuple[str, str, str]


def _llm_request(data: Mapping[str, Any]) -> Described:
    tools = ", ".join(data.get("tools", [])) or "none"
    return "llm", f"asking the model ({data.get('message_count', 0)} messages, tools: {tools})", ""


def _llm_response(data: Mapping[str, Any]) -> Described:
    calls = data.get("tool_calls") or []
    summary = f"{data.get('tokens_in', 0)} tokens in, {data.get('tokens_out', 0)} out"
    if calls:
        summary += f", {len(calls)} tool call{'s' if len(calls) != 1 else ''}"
    else:
        summary += ", final answer"
    return "llm", summary, str(data.get("content", ""))[:DETAIL_CHARS]


def _tool_call(data: Mapping[str, Any]) -> Described:
    return "tool", str(data.get("name", "")), str(data.get("arguments", ""))[:DETAIL_CHARS]


def _tool_result(data: Mapping[str, Any]) -> Described:
    summary = f"{data.get('name', '')} {data.get('target', '')}".strip()
    return "result", summary, str(data.get("output", ""))[:DETAIL_CHARS]


def _tool_denied(data: Mapping[str, Any]) -> Described:
    return "denied", f"{data.get('name', '')}: {data.get('code', '')}", str(data.get("reason", ""))


def _status(data: Mapping[str, Any]) -> Described:
    status = str(data.get("status", ""))
    detail = " ".join(str(x) for x in (data.get("code"), data.get("message")) if x)
    return "status", JOB_LABELS.get(status, status), detail


def _limit(data: Mapping[str, Any]) -> Described:
    return "limit", str(data.get("reason") or data.get("limit", "")), ""


def _prompt(data: Mapping[str, Any]) -> Described:
    return "note", " + ".join(data.get("components", [])), "; ".join(data.get("notes", []))


def _context(data: Mapping[str, Any]) -> Described:
    # Sections such as "(request)" and "(structure)" are in the context but are not files.
    files = [f for f in data.get("files", []) if not str(f.get("path", "")).startswith("(")]
    summary = f"{data.get('strategy', '')}: {data.get('token_count', 0)} tokens, {len(files)} files"
    return "note", summary, ""


def _note(data: Mapping[str, Any]) -> Described:
    return "note", str(data.get("message", "")), ""


DESCRIBE_EVENT: dict[str, Callable[[Mapping[str, Any]], Described]] = {
    JobEventKind.LLM_REQUEST: _llm_request,
    JobEventKind.LLM_RESPONSE: _llm_response,
    JobEventKind.TOOL_CALL: _tool_call,
    JobEventKind.TOOL_RESULT: _tool_result,
    JobEventKind.TOOL_DENIED: _tool_denied,
    JobEventKind.STATUS: _status,
    JobEventKind.LIMIT: _limit,
    JobEventKind.PROMPT: _prompt,
    JobEventKind.CONTEXT: _context,
}


def job_event_view(seq: int, kind: str, data: Mapping[str, Any], at: datetime) -> JobEventView:
    tone, summary, detail = DESCRIBE_EVENT.get(kind, _note)(data)
    label = JOB_EVENT_LABELS.get(kind, kind)
    return JobEventView(seq, kind, label, tone, summary, detail, stamp_of(at))


def _job_view(job: Job, events: list[JobEventView]) -> JobView:
    return JobView(
        id=str(job.pk),
        short_id=str(job.pk)[:8],
        role=role_badge(registry.by_id(job.role_id).slug),
        request=job.request,
        status=job.status,
        status_label=JOB_LABELS.get(job.status, job.status),
        live=not job.is_final,
        llm_calls=job.llm_calls,
        tokens=job.tokens_in + job.tokens_out,
        model=job.model,
        provider=job.provider,
        result=job.result,
        error_code=job.error_code,
        error_message=job.error_message,
        created=stamp_of(job.created_at),
        events=events,
        denied=job_denied_count(job),
        unconsumed_queue=_unconsumed_queue(job),
        waiting=waiting_view(job_in_flight(job)),
        endpoint=job.endpoint.removeprefix("scripted:") if job.provider == "scripted" else "",
        parent=str(job.parent_id)[:8] if job.parent_id else "",
        escalation=escalation_words(job),
        resumed_from=str(job.resumed_from_id)[:8] if job.resumed_from_id else "",
        resumable=job.status == JobStatus.LIMIT_EXCEEDED
        and job.run_stage_id is None
        and job.parent_id is None,
    )


def _unconsumed_queue(job: Job) -> str:
    # A queued job on a queue nobody consumes waits silently: the panel says so.
    if job.status != JobStatus.QUEUED:
        return ""
    queue = job_queue(job)
    return "" if queue_has_consumer(queue) else queue


def _newest_events(job: Job) -> list[JobEventView]:
    return [job_event_view(*row) for row in job_newest_events(job, JOB_EVENTS_SHOWN)]


def session_jobs(session_id: Any) -> list[JobView]:
    """The newest jobs of a session; the events of the newest one (the live stream)."""
    jobs = session_jobs_shown(session_id, JOBS_SHOWN)
    return [_job_view(job, _newest_events(job) if i == 0 else []) for i, job in enumerate(jobs)]


def job_panel(session_id: Any, job_id: Any) -> JobView | None:
    """One job of a session with its newest events (a run stage's job, shown on request)."""
    job = session_job(session_id, job_id)
    return _job_view(job, _newest_events(job)) if job is not None else None
