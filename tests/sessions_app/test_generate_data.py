"""``manage.py acode_generate_data``: the volumes asked for, and data the product accepts:
histories that match their sessions and follow the rules, audit chains that verify, job
events numbered per job."""

from __future__ import annotations

import io
import itertools

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count, Max

from roles.registry import registry
from sessions_app.models import (
    AgentSession,
    AuditAnchor,
    AuditChain,
    AuditEvent,
    Job,
    JobEvent,
    RoleTransition,
)
from sessions_app.services.audit import audit_record
from sessions_app.services.audit_verify import audit_verify

pytestmark = pytest.mark.django_db


def generate(**options: object) -> str:
    out = io.StringIO()
    call_command("acode_generate_data", stdout=out, **options)
    return out.getvalue()


def test_scale_writes_the_default_volumes_times_the_scale_and_says_how_long() -> None:
    seeded = AuditEvent.objects.count()  # role seeding audits itself (global chain)
    output = generate(scale=0.002, seed=3)
    assert AgentSession.objects.count() == 20
    assert RoleTransition.objects.count() == 200
    assert AuditEvent.objects.count() - seeded == 2000
    assert JobEvent.objects.count() == 200
    assert "audit events" in output and "rows/s" in output and "done in" in output


def test_generated_audit_chains_verify_and_are_anchored() -> None:
    audit_record(event_type="RoleEdited", actor="admin", target="before")  # the global head
    before = AuditEvent.objects.count()
    generate(sessions=12, transitions=40, audit_events=400, job_events=60, seed=5)
    report = audit_verify()
    assert report.ok, report.problem
    assert report.checked == AuditEvent.objects.count() == before + 400
    assert AuditAnchor.objects.count() == 1
    for chain in AuditChain.objects.exclude(last_seq=0):
        assert chain.anchored_seq == chain.last_seq
        newest = AuditEvent.objects.filter(chain=chain.key).order_by("-seq").first()
        assert newest is not None and (newest.seq, newest.hash) == (chain.last_seq, chain.last_hash)
    for session in AgentSession.objects.exclude(audit_seq=0):
        assert session.audit_anchored_seq == session.audit_seq
        newest = AuditEvent.objects.filter(session=session).order_by("-seq").first()
        assert newest is not None
        assert (newest.seq, newest.hash) == (session.audit_seq, session.audit_hash)


def test_a_second_run_adds_to_what_is_there_and_still_verifies() -> None:
    generate(sessions=5, transitions=15, audit_events=100, job_events=20, seed=1)
    generate(sessions=5, transitions=15, audit_events=100, job_events=20, seed=2)
    assert AgentSession.objects.count() == 10
    assert audit_verify().ok


def test_sessions_match_their_histories_which_follow_the_rules() -> None:
    generate(sessions=15, transitions=90, audit_events=300, job_events=50, seed=7)
    registry.sync()
    for session in AgentSession.objects.all():
        history = list(session.transitions.order_by("seq"))
        assert [t.seq for t in history] == list(range(1, len(history) + 1))
        assert session.transition_count == len(history)
        assert history[0].from_role_id is None and history[0].to_role_id == registry.default().id
        last = history[-1]
        assert session.current_role_id == last.to_role_id
        assert session.role_since == last.created_at and session.last_reason == last.reason
        for before, after in itertools.pairwise(history):
            assert after.from_role_id == before.to_role_id
            source = registry.by_id(after.from_role_id).slug
            assert registry.rule(source, registry.by_id(after.to_role_id).slug) is not None
        audited = session.audit_events.filter(event_type="RoleTransition").count()
        assert audited == len(history) - 1


def test_job_events_are_numbered_from_one_in_every_job() -> None:
    generate(sessions=8, transitions=16, audit_events=80, job_events=120, seed=9)
    assert JobEvent.objects.count() == 120
    jobs = Job.objects.annotate(n=Count("events"), top=Max("events__seq"))
    assert jobs.exists()
    for job in jobs:
        assert job.n == job.top


def test_fewer_transitions_than_sessions_is_refused() -> None:
    with pytest.raises(CommandError, match="starts with one transition"):
        generate(sessions=10, transitions=5, audit_events=10, job_events=0)
