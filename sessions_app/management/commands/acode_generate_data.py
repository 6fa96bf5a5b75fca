"""Generate realistic volumes of sessions, role history, audit events and job events.

    manage.py acode_generate_data [--scale 0.01] [--sessions N] [--transitions N]
        [--audit-events N] [--job-events N] [--seed S] [--owners N] [--days N]

Defaults: 10,000 sessions, 100,000 transitions, 1,000,000 audit events, 100,000 job
events, spread over a few owners, every role, every status and ``--days`` of history.
The data is valid for the product: each session's ``transition_count``, current role,
role version and last reason match its history, which follows the transition rules;
every session has its own audit hash chain (``event_hash``, consecutive ``seq``, the
chain head on the session row), events without a session continue the global chain, and
an anchor seals every chain at the end (``audit_anchor``), so ``audit_verify`` passes.
Written with ``COPY`` on PostgreSQL, batched ``executemany`` elsewhere, in one
transaction per batch of sessions; it only adds rows next to what is there.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from django.utils import timezone

from audit.services import event_hash
from roles.registry import registry
from sessions_app.management.bulk_rows import RowWriter
from sessions_app.management.synthetic import SessionStory, Vocabulary, split
from sessions_app.models import (
    GLOBAL_CHAIN,
    AgentSession,
    AuditChain,
    AuditEvent,
    Job,
    JobEvent,
    PendingChange,
    RoleTransition,
)
from sessions_app.services.audit import audit_anchor


@dataclass(frozen=True)
class Volumes:
    sessions: int
    transitions: int
    audit_events: int
    job_events: int


FULL = Volumes(sessions=10_000, transitions=100_000, audit_events=1_000_000, job_events=100_000)
GLOBAL_SHARE = 0.01  # audit events without a session (role edits and the like)
TABLES = (
    ("sessions", AgentSession),
    ("transitions", RoleTransition),
    ("audit events", AuditEvent),
    ("jobs", Job),
    ("job events", JobEvent),
    ("pending changes", PendingChange),
)


@dataclass(frozen=True)
class Shares:
    """How the volumes spread over the sessions: one entry per session in each list (the
    jobs' sizes in events), and the audit events of the global chain."""

    global_events: int
    transitions: list[int]
    audit: list[int]
    jobs: list[list[int]]

    @classmethod
    def of(cls, volumes: Volumes, rng: random.Random) -> Shares:
        n = volumes.sessions
        global_events = round(volumes.audit_events * GLOBAL_SHARE)
        if volumes.audit_events - global_events < volumes.transitions:
            global_events = 0  # too few events to audit every transition: sessions first
        transitions = split(volumes.transitions, n, 1, rng)
        audit_total = volumes.audit_events - global_events
        if audit_total >= volumes.transitions:
            extra = split(audit_total - volumes.transitions, n, 0, rng)
            audit = [t + e for t, e in zip(transitions, extra, strict=True)]
        else:
            audit = split(audit_total, n, 1 if audit_total >= n else 0, rng)
        jobs = job_sizes(volumes.job_events, n, audit, rng)
        return cls(global_events, transitions, audit, jobs)


@dataclass
class Written:
    rows: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, rows: int, seconds: float) -> None:
        self.rows[name] = self.rows.get(name, 0) + rows
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds


class GlobalChain:
    """Appends events without a session to the global chain, from its locked head."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary

    def events(self, count: int, start: datetime, end: datetime, rng: random.Random) -> list[Any]:
        if count <= 0:
            return []
        head = AuditChain.objects.select_for_update().filter(pk=GLOBAL_CHAIN).first()
        if head is None:
            AuditChain.objects.get_or_create(key=GLOBAL_CHAIN)
            head = AuditChain.objects.select_for_update().get(pk=GLOBAL_CHAIN)
        moments = sorted(start + (end - start) * rng.random() for _ in range(count))
        rows, seq, prev = [], head.last_seq, head.last_hash
        probe = AuditEvent()
        for at in moments:
            seq += 1
            kind, target, result, details = self.vocabulary.global_event(rng)
            row = {
                "chain": GLOBAL_CHAIN, "seq": seq, "event_type": kind, "session_id": None,
                "role": "", "actor": "admin", "target": target, "result": result,
                "details": details, "created_at": at, "prev_hash": prev,
            }  # fmt: skip
            prev = row["hash"] = hashed(probe, row)
            rows.append(row)
        AuditChain.objects.filter(pk=GLOBAL_CHAIN).update(last_seq=seq, last_hash=prev)
        return rows


def hashed(probe: AuditEvent, row: dict[str, Any]) -> str:
    """``event_hash`` of a row, through one reused (never saved) ``AuditEvent``."""
    for name, value in row.items():
        setattr(probe, name, value)
    return event_hash(probe)


class Command(BaseCommand):
    help = "Generate realistic volumes of sessions, transitions, audit and job events."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--scale", type=float, default=1.0, help="Multiply every default volume (0.01: 1%%)."
        )
        parser.add_argument("--sessions", type=int, help=f"Default {FULL.sessions:,} x scale.")
        parser.add_argument(
            "--transitions", type=int, help=f"Default {FULL.transitions:,} x scale."
        )
        parser.add_argument(
            "--audit-events", type=int, help=f"Default {FULL.audit_events:,} x scale."
        )
        parser.add_argument("--job-events", type=int, help=f"Default {FULL.job_events:,} x scale.")
        parser.add_argument(
            "--seed", type=int, default=0, help="Random seed (same seed, same data)."
        )
        parser.add_argument(
            "--owners", type=int, default=6, help="Owners the sessions spread over."
        )
        parser.add_argument("--days", type=int, default=180, help="Days of history.")
        parser.add_argument("--batch", type=int, default=500, help="Sessions per transaction.")
        parser.add_argument(
            "--no-anchor", action="store_true", help="Do not seal the new chains with an anchor."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        volumes = self.volumes(options)
        if volumes.sessions < 1:
            raise CommandError("--sessions must be at least 1.")
        if volumes.transitions < volumes.sessions:
            raise CommandError(
                "Every session starts with one transition: --transitions >= sessions."
            )
        started = time.perf_counter()
        rng = random.Random(options["seed"])
        registry.sync()
        owners = self.owners(options["owners"])
        vocabulary = Vocabulary.from_registry(registry)
        self.stdout.write(
            f"generating {volumes.sessions:,} sessions, {volumes.transitions:,} transitions, "
            f"{volumes.audit_events:,} audit events, {volumes.job_events:,} job events "
            f"on {connection.vendor} ({connection.settings_dict['NAME']}), seed {options['seed']}"
        )
        written = self.generate(volumes, rng, owners, vocabulary, options)
        if not options["no_anchor"]:
            began = time.perf_counter()
            anchor = audit_anchor()
            written.add("audit anchors", 1 if anchor else 0, time.perf_counter() - began)
        if connection.vendor == "postgresql":
            began = time.perf_counter()
            # Statistics (and the visibility map, for index-only scans) for the new volume;
            # VACUUM cannot run inside a transaction (tests run in one).
            command = "ANALYZE" if connection.in_atomic_block else "VACUUM ANALYZE"
            with connection.cursor() as cursor:
                for model in (AgentSession, RoleTransition, AuditEvent, AuditChain, Job, JobEvent):
                    cursor.execute(f"{command} {connection.ops.quote_name(model._meta.db_table)}")
            written.add("vacuum analyze", 0, time.perf_counter() - began)
        total = time.perf_counter() - started
        for name, rows in written.rows.items():
            seconds = written.seconds[name]
            rate = f"{rows / seconds:>10,.0f} rows/s" if rows and seconds else ""
            self.stdout.write(f"  {name:<16} {rows:>10,} rows  {seconds:7.1f} s  {rate}")
        self.stdout.write(f"done in {total:.1f} s")

    def volumes(self, options: dict[str, Any]) -> Volumes:
        scale = options["scale"]

        def pick(name: str) -> int:
            given = options[name]
            return int(given) if given is not None else round(getattr(FULL, name) * scale)

        return Volumes(
            sessions=pick("sessions"),
            transitions=pick("transitions"),
            audit_events=pick("audit_events"),
            job_events=pick("job_events"),
        )

    def owners(self, count: int) -> list[User]:
        out = []
        for n in range(1, max(1, count) + 1):
            user, created = User.objects.get_or_create(
                username=f"scale-owner-{n}", defaults={"email": f"scale-owner-{n}@example.com"}
            )
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            out.append(user)
        return out

    def generate(
        self,
        volumes: Volumes,
        rng: random.Random,
        owners: list[User],
        vocabulary: Vocabulary,
        options: dict[str, Any],
    ) -> Written:
        n = volumes.sessions
        shares = Shares.of(volumes, rng)
        now = timezone.now()
        first = now - timedelta(days=options["days"])
        created = sorted(first + (now - first) * rng.random() for _ in range(n))
        writers = {name: RowWriter(model) for name, model in TABLES}
        written = Written()
        chain = GlobalChain(vocabulary)
        probe = AuditEvent()
        batch = max(1, options["batch"])
        for start in range(0, n, batch):
            stop = min(n, start + batch)
            began = time.perf_counter()
            tables: dict[str, list[dict[str, Any]]] = {name: [] for name in writers}
            for i in range(start, stop):
                story = SessionStory(
                    vocabulary=vocabulary,
                    rng=rng,
                    owner=owners[i % len(owners)],
                    created=created[i],
                    now=now,
                    transitions=shares.transitions[i],
                    audit_events=shares.audit[i],
                    jobs=shares.jobs[i],
                    hasher=lambda row: hashed(probe, row),
                )
                for name, rows in story.tables().items():
                    tables[name].extend(rows)
            built = time.perf_counter() - began
            with transaction.atomic():
                count = round(shares.global_events * stop / n)
                count -= round(shares.global_events * start / n)
                end = created[stop] if stop < n else now
                tables["audit events"].extend(chain.events(count, created[start], end, rng))
                for name, writer in writers.items():
                    began = time.perf_counter()
                    rows = tables[name]
                    if name == "audit events":
                        rows.sort(key=lambda r: r["created_at"])  # ids follow time
                    written.add(name, writer.write(rows), time.perf_counter() - began)
            written.add("build (python)", 0, built)
            self.stdout.write(f"  sessions {stop:,}/{n:,}", ending="\r")
            self.stdout.flush()
        self.stdout.write("")
        return written


def job_sizes(total: int, sessions: int, weights: list[int], rng: random.Random) -> list[list[int]]:
    """Jobs of 5 to 15 events (the last one takes what is left), assigned to sessions in
    proportion to their activity; the sizes sum to ``total``."""
    sizes = []
    left = total
    while left > 0:
        size = min(left, rng.randint(5, 15))
        sizes.append(size)
        left -= size
    out: list[list[int]] = [[] for _ in range(sessions)]
    owners = rng.choices(range(sessions), weights=[w + 1 for w in weights], k=len(sizes))
    for size, index in zip(sizes, owners, strict=True):
        out[index].append(size)
    return out
