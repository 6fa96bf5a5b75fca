"""One synthetic session's life as rows, derived the way the services would have left it.

A ``SessionStory``'s transitions walk the transition rules from Default, its audit events
form the session's hash chain (SessionCreated first, one RoleTransition per change of role,
tool calls in the role in force at the time), and its jobs carry numbered events. The
session row is derived from that history.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import User

from audit.services import GENESIS_HASH
from sessions_app.management.synthetic.jobs import job_event_data, job_event_kinds
from sessions_app.management.synthetic.vocabulary import (
    PATHS,
    REASONS,
    THINGS,
    VERBS,
    Row,
    Vocabulary,
    new_uuid,
)
from sessions_app.models import (
    AuditEventType,
    ChangeKind,
    JobEventKind,
    JobStatus,
    RiskTier,
    SessionStatus,
    StepStatus,
    chain_key,
)


@dataclass
class Moment:
    at: datetime
    role: str  # the role in force once the moment has happened
    change: tuple[str | None, str, str] | None = None  # (from, to, reason) of a transition
    job: Row | None = None  # the job started at this moment


class SessionStory:
    """One session with its transitions, audit chain, jobs, job events and changes."""

    def __init__(
        self,
        *,
        vocabulary: Vocabulary,
        rng: random.Random,
        owner: User,
        created: datetime,
        now: datetime,
        transitions: int,
        audit_events: int,
        jobs: list[int],
        hasher: Callable[[Row], str],
    ) -> None:
        self.words, self.rng, self.owner, self.now = vocabulary, rng, owner, now
        self.transitions, self.audit_events, self.jobs = transitions, audit_events, jobs
        self.hasher = hasher
        self.id = new_uuid(rng)
        self.created = created
        thing = rng.choice(THINGS)
        self.title = f"{rng.choice(VERBS)} {thing} #{rng.randint(1, 9999)}"
        self.task = f"{self.title}: keep the public behaviour, cover it with tests."
        self.risk_tier = rng.choices(list(RiskTier.values), [6, 3, 1])[0]

    def timeline(self) -> list[Moment]:
        """Every moment of the session in order, with the role after it."""
        count = max(self.audit_events, self.transitions)
        rng = self.rng
        mean = rng.lognormvariate(math.log(60), 0.8)
        gaps = [rng.expovariate(1 / mean) for _ in range(count - 1)]
        room = max(1.0, (self.now - self.created).total_seconds() * 0.95)
        if sum(gaps) > room:  # a young session: squeeze its history into its lifetime
            gaps = [g * room / sum(gaps) for g in gaps]
        changes = set(rng.sample(range(1, count), self.transitions - 1))
        role = self.words.default
        at = self.created
        moments = [Moment(at, role, (None, role, "Initial state"))]
        for i, gap in enumerate(gaps, start=1):
            at = at + timedelta(seconds=gap)
            if i in changes:
                target = self.words.next_role(role, rng)
                moments.append(Moment(at, target, (role, target, REASONS.get(target, "Next"))))
                role = target
            else:
                moments.append(Moment(at, role))
        return moments

    def tables(self) -> dict[str, list[Row]]:
        moments = self.timeline()
        last_change = max(i for i, m in enumerate(moments) if m.change is not None)
        status = self.status(moments[-1].at)
        role = moments[-1].role
        spec = self.words.roles[role]
        out: dict[str, list[Row]] = {
            "transitions": self.transition_rows(moments),
            "jobs": [],
            "job events": [],
            "pending changes": [],
        }
        self.place_jobs(moments, status, out)
        events = self.audit_rows(moments)
        out["audit events"] = events
        visited = {m.role for m in moments}
        out["sessions"] = [
            {
                "id": self.id, "title": self.title, "task": self.task, "owner_id": self.owner.pk,
                "workspace": f"/srv/acode/workspaces/{self.id}", "workspace_managed": True,
                "repository_id": None, "branch": f"acode/{self.id}",
                "base_commit": f"{self.rng.getrandbits(160):040x}",
                "current_role_id": spec.id, "role_version_id": spec.version_id,
                "role_since": moments[last_change].at, "last_reason": moments[last_change].change[2],  # type: ignore[index]
                "transition_count": self.transitions,
                "plan": self.plan(role) if visited & {"planner", "coder"} else [],
                "risk_tier": self.risk_tier,
                "status": status, "active_run_id": None,
                "audit_seq": len(events),
                "audit_hash": events[-1]["hash"] if events else GENESIS_HASH,
                "audit_anchored_seq": 0,
                "created_at": self.created, "updated_at": moments[-1].at,
            }
        ]  # fmt: skip
        if status == SessionStatus.ACTIVE and role in ("coder", "reviewer", "tester"):
            out["pending changes"] = self.changes(moments[-1].at)
        return out

    def status(self, last: datetime) -> str:
        recent = (self.now - last) < timedelta(days=30)
        weights = [60, 20, 15, 5] if recent else [5, 5, 55, 35]
        return self.rng.choices(list(SessionStatus.values), weights)[0]

    def transition_rows(self, moments: list[Moment]) -> list[Row]:
        rows: list[Row] = []
        for moment in moments:
            if moment.change is None:
                continue
            source, target, reason = moment.change
            by_owner = source is None or self.rng.random() < 0.6
            rows.append(
                {
                    "session_id": self.id, "seq": len(rows) + 1,
                    "from_role_id": self.words.roles[source].id if source else None,
                    "to_role_id": self.words.roles[target].id,
                    "role_version_id": self.words.roles[target].version_id,
                    "reason": reason,
                    "actor": self.owner.username if by_owner else "orchestrator",
                    "user_id": self.owner.pk if by_owner else None,
                    "request_id": "", "created_at": moment.at,
                }
            )  # fmt: skip
        return rows

    def audit_rows(self, moments: list[Moment]) -> list[Row]:
        """The session's hash chain over its first ``audit_events`` moments."""
        rows: list[Row] = []
        prev = GENESIS_HASH
        key = chain_key(self.id)
        for seq, moment in enumerate(moments[: self.audit_events], start=1):
            actor = self.owner.username
            kind: str
            if seq == 1:
                kind, target, result = AuditEventType.SESSION_CREATED, str(self.id), "created"
                details: Row = {
                    "title": self.title, "workspace": f"/srv/acode/workspaces/{self.id}",
                    "repository": None, "branch": f"acode/{self.id}", "risk_tier": self.risk_tier,
                }  # fmt: skip
            elif moment.change is not None:
                source, to, reason = moment.change
                kind, target, result = AuditEventType.ROLE_TRANSITION, f"{source}->{to}", "ok"
                version = self.words.roles[to].version
                details = {
                    "from_role": source, "to_role": to, "reason": reason,
                    "role_version": version, "request_id": "",
                }  # fmt: skip
            elif moment.job is not None:
                kind, target, result = AuditEventType.JOB_EVENT, f"job {moment.job['id']}", "queued"
                details = {"request": moment.job["request"]}
            else:
                kind, target, result, details = self.words.session_event(moment.role, self.rng)
                actor = f"job:{new_uuid(self.rng).hex[:8]}"
            row = {
                "chain": key, "seq": seq, "event_type": str(kind), "session_id": self.id,
                "role": moment.role, "actor": actor, "target": target, "result": result,
                "details": details, "created_at": moment.at, "prev_hash": prev,
            }  # fmt: skip
            prev = row["hash"] = self.hasher(row)
            rows.append(row)
        return rows

    def place_jobs(self, moments: list[Moment], status: str, out: dict[str, list[Row]]) -> None:
        """Each job starts at a quiet moment (its audit event says it was queued)."""
        quiet = [i for i, m in enumerate(moments[: self.audit_events]) if m.change is None]
        spots = self.rng.sample(quiet, min(len(quiet), len(self.jobs)))
        spots += [self.rng.randrange(len(moments)) for _ in range(len(self.jobs) - len(spots))]
        for number, (size, spot) in enumerate(zip(self.jobs, sorted(spots), strict=True)):
            live = status == SessionStatus.ACTIVE and number == len(self.jobs) - 1
            job, events = self.job(moments[spot].role, moments[spot].at, size, live)
            if moments[spot].job is None and moments[spot].change is None:
                moments[spot].job = job
            out["jobs"].append(job)
            out["job events"].extend(events)

    def job(self, role: str, at: datetime, size: int, live: bool) -> tuple[Row, list[Row]]:
        rng = self.rng
        final = JobStatus.RUNNING if live and rng.random() < 0.2 else None
        final = (
            final
            or rng.choices(
                [
                    JobStatus.SUCCEEDED,
                    JobStatus.FAILED,
                    JobStatus.CANCELLED,
                    JobStatus.LIMIT_EXCEEDED,
                ],
                [80, 8, 5, 7],
            )[0]
        )
        job_id = new_uuid(rng)
        kinds = job_event_kinds(size, running=final == JobStatus.RUNNING)
        tools = self.words.tools[role]
        events, moment, tokens_in, tokens_out = [], at, 0, 0
        for seq, kind in enumerate(kinds, start=1):
            moment = min(self.now, moment + timedelta(seconds=rng.uniform(0.2, 4.0)))
            tool, path = rng.choice(tools), rng.choice(PATHS)
            data = job_event_data(
                kind, seq, role=role, tool=tool, path=path, tools=tools, final=final,
                last=seq >= len(kinds) - 1, rng=rng,
            )  # fmt: skip
            if kind == JobEventKind.LLM_RESPONSE:
                tokens_in += data["tokens_in"]
                tokens_out += data["tokens_out"]
            events.append(
                {"job_id": job_id, "seq": seq, "kind": kind, "data": data, "created_at": moment}
            )
        llm_calls = sum(1 for k in kinds if k == JobEventKind.LLM_RESPONSE)
        request = f"{rng.choice(VERBS)} {rng.choice(THINGS)} in {rng.choice(PATHS)}"
        job = {
            "id": job_id, "session_id": self.id, "role_id": self.words.roles[role].id,
            "role_version_id": self.words.roles[role].version_id, "request": request,
            "status": final, "provider": "openai", "model": "qwen2.5-coder-7b-instruct",
            "endpoint": "http://127.0.0.1:8080/v1", "llm_calls": llm_calls,
            "tokens_in": tokens_in, "tokens_out": tokens_out,
            "result": "Done." if final == JobStatus.SUCCEEDED else "",
            "error_code": "ACODE-JOB-003" if final == JobStatus.FAILED else "",
            "error_message": "The model endpoint did not answer." if final == JobStatus.FAILED else "",
            "attempts": 1, "created_by": self.owner.username, "created_at": at,
            "started_at": at, "heartbeat_at": moment,
            "finished_at": None if final == JobStatus.RUNNING else moment,
        }  # fmt: skip
        return job, events

    def plan(self, role: str) -> list[Row]:
        steps = self.rng.randint(3, 6)
        done = {"planner": 0, "coder": steps // 2, "reviewer": steps - 1, "tester": steps - 1}
        finished = done.get(role, steps)
        return [
            {
                "number": n, "title": f"Step {n}: {self.rng.choice(THINGS)}", "detail": "",
                "files": [self.rng.choice(PATHS)], "depends_on": [n - 1] if n > 1 else [],
                "status": StepStatus.DONE if n <= finished else StepStatus.PENDING,
            }
            for n in range(1, steps + 1)
        ]  # fmt: skip

    def changes(self, at: datetime) -> list[Row]:
        paths = self.rng.sample(PATHS, self.rng.randint(0, 3))
        diff = "--- a/{p}\n+++ b/{p}\n@@ -1,2 +1,2 @@\n-old = 1\n+new = 2\n context\n"
        return [
            {
                "session_id": self.id, "path": p, "kind": ChangeKind.MODIFIED,
                "diff": diff.format(p=p), "baseline": "old = 1\n context\n",
                "role_id": self.words.roles["coder"].id if "coder" in self.words.roles else None,
                "created_at": at, "updated_at": at,
            }
            for p in paths
        ]  # fmt: skip
