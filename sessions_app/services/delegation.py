"""Delegation (issue 41): a job hands a sub-task to a sub-agent, a child job of its own.

``delegation_start`` (the ``delegate`` tool, which needs the ``spawn`` permission) checks
the child's role against the parent's: the same role, one below it, or one the one policy
diff proves no wider (``roles.services.policy.delegation_widening``; otherwise
ACODE-JOB-010 with the diff's reason). Depth and fan-out are bounded
(the roles' ``max_delegation_depth`` and ``max_sub_agents``; ACODE-JOB-011). The
child's model-call and token budget is carved out of what the parent has left, and the
parent's own caps shrink by as much (ACODE-JOB-012 when nothing is left). The child is
queued on its own role's queue, pinned to that role's version; the delegation is audited
with both roles. ``delegation_collect`` (the ``collect`` tool) waits for children and
returns their results, each with the calls it was refused (what it escalates to its
parent). When a job ends, ``jobs.job_finish`` stops its children still running."""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction

from acode.errors import AcodeError
from roles.registry import registry
from roles.services.policy import delegation_widening
from sessions_app.models import FINAL_JOB_STATUSES, AuditEventType, Job, JobEventKind, JobStatus
from sessions_app.services.audit import audit_record
from sessions_app.services.job_events import job_event
from sessions_app.services.jobs import job_enqueue_later, job_heartbeat
from sessions_app.services.locks import lock_job

WIDER = "ACODE-JOB-010"
LIMIT = "ACODE-JOB-011"
NO_BUDGET = "ACODE-JOB-012"


def _depth_limit(job: Job) -> int:
    """How many more levels may go below ``job``: each ancestor's role (and the job's own)
    allows its ``max_delegation_depth`` below it; the tightest wins."""
    left, current, below = registry.by_id(job.role_id).spec.max_delegation_depth, job, 0
    while current.parent_id is not None and below < 50:
        current = Job.objects.only("parent_id", "role_id").get(pk=current.parent_id)
        below += 1
        left = min(left, registry.by_id(current.role_id).spec.max_delegation_depth - below)
    return left


def _left(own: int, cap: int | None, used: int) -> int:
    return (min(own, cap) if cap is not None else own) - used


def delegation_start(*, parent: Job, role: str, task: str, llm_calls: int | None = None) -> Job:
    """Queue a child job of ``parent`` in ``role`` doing ``task``; see the module."""
    parent_role = registry.by_id(parent.role_id)
    child_role = registry.get(role)  # ACODE-ROL-001 when there is none
    wider = delegation_widening(parent_role.slug, child_role.slug)
    if wider is not None:
        raise AcodeError(
            WIDER,
            f"Role {child_role.slug} may do what {parent_role.slug} may not: {wider.summary()}.",
            {"role": child_role.slug, "parent_role": parent_role.slug,
             "gains": [g.as_data() for g in wider.gains]},
        )  # fmt: skip
    depth = _depth_limit(parent)
    if depth < 1:
        raise AcodeError(LIMIT, "No more levels of sub-agents may go below this job (its "
                                "roles' max_delegation_depth); do this part yourself.")  # fmt: skip
    with transaction.atomic():
        locked = lock_job(parent.pk)
        most = parent_role.spec.max_sub_agents
        if locked.children.count() >= most:
            raise AcodeError(LIMIT, f"A job in role {parent_role.slug} starts at most {most} "
                                    "sub-agents (its max_sub_agents).")  # fmt: skip
        spec = parent_role.spec
        calls_left = _left(spec.max_llm_calls, locked.limit_llm_calls, parent.llm_calls) - 1
        tokens_left = _left(
            spec.max_tokens, locked.limit_tokens, parent.tokens_in + parent.tokens_out
        )
        calls = min(llm_calls or max(1, calls_left // 2), calls_left, child_role.spec.max_llm_calls)
        tokens = min(tokens_left // 2, child_role.spec.max_tokens)
        if calls < 1 or tokens < 1:
            raise AcodeError(NO_BUDGET, f"Only {max(calls_left, 0)} model calls and "
                                        f"{max(tokens_left, 0)} tokens are left to this job.")  # fmt: skip
        # What the child gets, the parent no longer has (its caps shrink by as much).
        locked.limit_llm_calls = _left(spec.max_llm_calls, locked.limit_llm_calls, 0) - calls
        locked.limit_tokens = _left(spec.max_tokens, locked.limit_tokens, 0) - tokens
        locked.save(update_fields=["limit_llm_calls", "limit_tokens"])
        parent.limit_llm_calls, parent.limit_tokens = locked.limit_llm_calls, locked.limit_tokens
        child = Job.objects.create(
            session_id=parent.session_id, role_id=child_role.id,
            role_version_id=child_role.version_id, request=task.strip(),
            created_by=f"job:{str(parent.pk)[:8]}", parent=parent, run_stage=None,
            limit_llm_calls=calls, limit_tokens=tokens, limit_seconds=parent.limit_seconds,
        )  # fmt: skip
        queue = child_role.spec.queue
        job_event(child, JobEventKind.STATUS, {"status": JobStatus.QUEUED, "role": child_role.slug,
                                               "queue": queue, "parent": str(parent.pk)})  # fmt: skip
        job_event(parent, JobEventKind.NOTE, {
            "message": f"delegated to {child_role.slug} (job {str(child.pk)[:8]}): {calls} calls",
            "child": str(child.pk)})  # fmt: skip
        audit_record(
            event_type=AuditEventType.JOB_EVENT, actor=f"job:{str(parent.pk)[:8]}",
            session=parent.session, role=parent_role.slug, target=f"job {child.pk}",
            result="delegated",
            details={"parent_job": str(parent.pk), "parent_role": parent_role.slug,
                     "child_job": str(child.pk), "child_role": child_role.slug,
                     "llm_calls": calls, "tokens": tokens, "request": child.request[:500]},
        )  # fmt: skip
        transaction.on_commit(job_enqueue_later(child, queue))
    return child


def delegation_collect(
    *, parent: Job, jobs: list[str] | None = None, timeout: float = 600.0
) -> list[dict[str, Any]]:
    """Wait (keeping ``parent`` alive) for its children (``jobs``, or every one not yet
    collected) to end, or ``timeout``; their results, and the calls each was refused."""
    children = parent.children.all() if jobs else parent.children.filter(collected=False)
    if jobs:
        children = children.filter(pk__in=[j for j in jobs if _uuid(j)])
    wanted = list(children.values_list("pk", flat=True))
    deadline = time.monotonic() + timeout
    poll = max(0.05, float(settings.ACODE_CONSENT_POLL_SECONDS))
    while time.monotonic() < deadline:
        if not Job.objects.filter(pk__in=wanted).exclude(status__in=_FINAL).exists():
            break
        if Job.objects.filter(pk=parent.pk, cancel_requested=True).exists():
            break
        job_heartbeat(parent.pk)
        time.sleep(poll)
    out = []
    for child in Job.objects.filter(pk__in=wanted).select_related("role").order_by("created_at"):
        refused = [
            e.data.get("reason", "") for e in child.events.filter(kind=JobEventKind.TOOL_DENIED)
        ]
        out.append({"job": str(child.pk), "role": child.role.slug, "status": child.status,
                    "result": child.result, "error": child.error_message, "refused": refused})  # fmt: skip
    Job.objects.filter(pk__in=[c["job"] for c in out if c["status"] in _FINAL]).update(
        collected=True
    )
    return out


_FINAL = FINAL_JOB_STATUSES


def _uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
