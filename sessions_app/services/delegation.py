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
parent). When a job ends, ``jobs.job_finish`` stops its children still running.

A sub-agent that ends *blocked* (failed or out of budget, or asking a question: a
sub-agent's ``ask_human`` asks its parent, ``delegation_ask_parent``) climbs the chain:
``collect`` tells its parent first (``blocked`` in the result; the hop audited with both
roles). The parent resolves it by delegating again after it ended (a retry, another role,
or the same task with its answer); when the parent gives its final answer with a block
left unresolved (``delegation_escalate``), the block becomes the parent's own, passed up
to the parent's parent the same way, and at the top it is put to a person as a question
in the consent path ("escalated from <child role> via <parent roles>"; decision memory
answers it when a person answered the same before). The person's answer goes back to
the top job's model, which goes on with it. A depth guard (``MAX_ESCALATION_HOPS``, the
call escalation's too, and the jobs already passed) puts a block to a person where it
stops."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from acode.errors import AcodeError
from roles.registry import registry
from roles.services.policy import delegation_widening
from sessions_app.containment import redact_text
from sessions_app.models import (
    FINAL_JOB_STATUSES,
    AuditEventType,
    ConsentStatus,
    Job,
    JobEventKind,
    JobStatus,
)
from sessions_app.services.audit import audit_record
from sessions_app.services.consents import consent_refusal, tool_consent_ask, tool_consent_await
from sessions_app.services.jobs import job_enqueue_later, job_event, job_heartbeat
from sessions_app.services.locks import lock_job

WIDER = "ACODE-JOB-010"
LIMIT = "ACODE-JOB-011"
NO_BUDGET = "ACODE-JOB-012"
# How many levels a refused call or a block climbs at most (a guard against loops: the
# roles' max_delegation_depth keeps real chains shorter).
MAX_ESCALATION_HOPS = 10
BLOCKED_STATUSES = (JobStatus.FAILED, JobStatus.LIMIT_EXCEEDED)


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
        block = job_block(child)
        if block is not None and not child.collected:  # the parent is told: the first hop
            _hop_audit(child, parent, block)
        out.append({"job": str(child.pk), "role": child.role.slug, "status": child.status,
                    "result": child.result, "error": child.error_message, "refused": refused,
                    "blocked": block})  # fmt: skip
    Job.objects.filter(pk__in=[c["job"] for c in out if c["status"] in _FINAL]).update(
        collected=True
    )
    return out


def job_block(job: Job) -> dict[str, Any] | None:
    """What blocks a sub-agent that ended: the question it asked or the block it passed up
    (``from`` the role it started at, ``via`` the roles it climbed through), else its
    failure; None when it ended well or was stopped."""
    if not job.is_final:
        return None
    if job.escalation.get("reason"):
        return {key: job.escalation.get(key) for key in ("kind", "from", "via", "reason")}
    if job.status in BLOCKED_STATUSES:
        reason = " ".join(x for x in (job.error_code, job.error_message) if x) or job.status
        return {"kind": "failed", "from": registry.by_id(job.role_id).slug, "via": [],
                "reason": reason}  # fmt: skip
    return None


def block_text(block: dict[str, Any]) -> str:
    """``escalated from helper via mid, lead``: where a block came from, and through whom."""
    via = f" via {', '.join(block['via'])}" if block.get("via") else ""
    return f"escalated from {block['from']}{via}"


def escalation_words(job: Job) -> str:
    """A job's place in a block's climb, for its card: "blocked (question), escalated from
    helper via mid: Which port? · put to a person"; empty for the rest."""
    asked = job.escalation.get("asked")
    if asked:
        return f"put to a person: {block_text(asked)}: {asked.get('reason', '')}"
    block = job_block(job) if job.parent_id is not None else None
    if block is None:
        return ""
    went = {"parent": " · passed up to its parent agent", "person": " · put to a person"}
    where = f", {block_text(block)}" if block["via"] else ""
    return (f"blocked ({block['kind']}){where}: {block['reason']}"
            + went.get(job.escalation.get("handled", ""), ""))  # fmt: skip


def delegation_ask_parent(*, job: Job, question: str) -> None:
    """A sub-agent's question (its ``ask_human``) goes to its parent first: the sub-agent
    ends blocked with it, and its parent's ``collect`` shows it."""
    role = registry.by_id(job.role_id).slug
    job.escalation = {"kind": "question", "from": role, "via": [], "reason": question[:4000]}
    Job.objects.filter(pk=job.pk).update(escalation=job.escalation)
    job_event(job, JobEventKind.NOTE, {"message": "asked its parent agent", "question": question})


@dataclass(frozen=True)
class PersonAnswer:
    """A person's answer to the blocks a top job could not resolve: what its model is told,
    and how long the job waited for it (not the job's time)."""

    text: str
    waited: float


def delegation_escalate(job: Job) -> PersonAnswer | None:
    """Before ``job`` gives its final answer: the blocks of its sub-agents it did not
    resolve climb (see the module). None when there were none or they went to its parent;
    else the answer of the person they were put to."""
    blocks = _open_blocks(job)
    if not blocks:
        return None
    role = registry.by_id(job.role_id).slug
    first = blocks[0][1]
    merged = {"kind": first["kind"], "from": first["from"], "via": [*first["via"], role],
              "reason": "\n".join(b["reason"] for _, b in blocks)[:4000]}  # fmt: skip
    to_parent = escalation_climbs(job, merged)
    for child, block in blocks:
        if not child.collected:  # it ended after the last collect: its hop is audited now
            _hop_audit(child, job, block)
        handled = {**block, "handled": "parent" if to_parent else "person"}
        Job.objects.filter(pk=child.pk).update(escalation=handled, collected=True)
    if to_parent:
        job.escalation = merged
        Job.objects.filter(pk=job.pk).update(escalation=merged)
        job_event(job, JobEventKind.NOTE, {"message": f"{block_text(merged)}: passed up to "
                                                      "its parent agent"})  # fmt: skip
        return None
    return _ask_person(job, role, merged)


def escalation_climbs(job: Job, block: dict[str, Any]) -> bool:
    """Whether ``job``'s unresolved block goes to its parent (True) or to a person: the top
    job's go to a person, and so does a block the depth guard stops (more than
    ``MAX_ESCALATION_HOPS`` levels, or a parent it already passed: a loop)."""
    if job.parent_id is None or len(block["via"]) >= MAX_ESCALATION_HOPS:
        return False
    seen, current = {job.pk}, job
    while current.parent_id is not None:
        if current.parent_id in seen or len(seen) > MAX_ESCALATION_HOPS:
            return False
        seen.add(current.parent_id)
        current = Job.objects.only("parent_id").get(pk=current.parent_id)
    return True


def _open_blocks(job: Job) -> list[tuple[Job, dict[str, Any]]]:
    """The blocks of ``job``'s ended sub-agents that nobody handled and that it did not
    resolve by delegating again after they ended."""
    children = list(job.children.order_by("created_at"))
    out = []
    for child in children:
        block = job_block(child)  # None for a child still running
        if block is None or child.escalation.get("handled"):
            continue
        if any(c.created_at > (child.finished_at or child.created_at) for c in children):
            continue  # retried or re-delegated after it ended: resolved by the parent
        out.append((child, block))
    return out


def _hop_audit(child: Job, parent: Job, block: dict[str, Any]) -> None:
    """One hop of a block, audited with both roles (as the call escalation's hops are)."""
    child_role = registry.by_id(child.role_id).slug
    parent_role = registry.by_id(parent.role_id).slug
    audit_record(
        event_type=AuditEventType.JOB_EVENT, actor=f"job:{str(child.pk)[:8]}",
        session=parent.session, role=parent_role, target=f"job {parent.pk}", result="escalated",
        details={"phase": "escalated", "kind": block["kind"], "escalated_from": block["from"],
                 "via": block["via"], "reason": redact_text(block["reason"][:2000]),
                 "child_job": str(child.pk), "child_role": child_role,
                 "parent_job": str(parent.pk), "parent_role": parent_role},
    )  # fmt: skip
    job_event(parent, JobEventKind.NOTE, {"message": f"{child_role} (job {str(child.pk)[:8]}) "
                                                     f"is blocked, {block_text(block)}",
                                          "child": str(child.pk)})  # fmt: skip


def _ask_person(job: Job, role: str, block: dict[str, Any]) -> PersonAnswer:
    """Put a block to a person in the consent path (as ``role``, whose remembered answers
    apply) and wait for the answer."""
    started, rule, reason = time.monotonic(), block_text(block), redact_text(block["reason"])
    asked = audit_record(
        event_type=AuditEventType.TOOL_CONSENT, actor=f"job:{str(job.pk)[:8]}",
        session=job.session, role=role, target=f"ask_human {reason[:900]}",
        result="escalated",
        details={"phase": "asked", "tool": "ask_human", "rule": rule, "kind": block["kind"],
                 "escalated_from": block["from"], "via": block["via"], "job": str(job.pk),
                 "to": "person"},
    )  # fmt: skip
    consent = tool_consent_ask(
        session=job.session, job=job, role=role, tool="ask_human", target=reason,
        rule=rule, reason=f"A sub-agent is blocked ({block['kind']}), {rule}; nobody in its "
                          "chain resolved it.",
        arguments={}, asked_audit_id=asked.pk,
    )  # fmt: skip
    job.escalation = {"asked": {**block, "consent": str(consent.pk)}}
    Job.objects.filter(pk=job.pk).update(escalation=job.escalation)
    answered = tool_consent_await(consent, job=job)
    waited = time.monotonic() - started
    if answered.status == ConsentStatus.ALLOWED:
        note = answered.note or "(no words: go on as you see fit)"
        text = f"A person answered the block {rule} ({answered.answered_by_name}): {note}"
    else:
        text = (f"Nobody in the chain or among the people resolved the block {rule}: "
                f"{consent_refusal(answered)[1]} Do not retry it; finish with what you have.")  # fmt: skip
    job_event(job, JobEventKind.NOTE, {"message": text[:2000], "consent": str(consent.pk)})
    return PersonAnswer(text, waited)


_FINAL = FINAL_JOB_STATUSES


def _uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
