"""Two writers appending to one job's events at once: neither fails.

Found by the browser run test on PostgreSQL: a worker starting a job held the job row
locked and appended its "running" event, while the web process that queued the job
appended a note to the same job after its commit. Both picked the same next sequence
number; the note's insert waited on the job row for its foreign key, the worker waited on
the note's sequence number, and PostgreSQL killed one as a deadlock. The job row lock
must let a foreign-key writer through, so the clash is a unique violation the worker
answers by taking the next number.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection, transaction

from sessions_app.models import JobEvent, JobEventKind
from sessions_app.services.jobs import job_create, job_event
from sessions_app.services.locks import lock_job
from tests.sessions_app.jobkit import session_in

pytestmark = pytest.mark.django_db(transaction=True)


def _note_from_elsewhere(job_id: Any, outcome: list[str]) -> None:
    """Another process (here a thread with its own connection) appends a note."""
    try:
        from sessions_app.models import Job

        job_event(Job.objects.get(pk=job_id), JobEventKind.NOTE, {"message": "from elsewhere"})
        outcome.append("ok")
    except Exception as exc:  # the assertion below shows what went wrong
        outcome.append(f"{type(exc).__name__}: {exc}")
    finally:
        connection.close()


def test_an_event_appended_while_the_job_is_locked_elsewhere_does_not_deadlock(
    django_user_model: Any,
) -> None:
    owner = django_user_model.objects.create_user("o", "o@example.com", "pw")
    job = job_create(session=session_in("default", owner), request="hi", user=owner)
    before = JobEvent.objects.filter(job=job).count()
    outcome: list[str] = []
    with transaction.atomic():
        locked = lock_job(job.pk)  # as job_start holds it
        other = threading.Thread(target=_note_from_elsewhere, args=(job.pk, outcome))
        other.start()
        # Let the other writer take its sequence number first (the order that deadlocked).
        time.sleep(0.5)
        job_event(locked, JobEventKind.STATUS, {"status": "running"})
    other.join(timeout=30)
    assert outcome == ["ok"]
    seqs = list(JobEvent.objects.filter(job=job).order_by("seq").values_list("seq", flat=True))
    assert len(seqs) == before + 2
    assert seqs == list(range(1, len(seqs) + 1))  # still gapless and in order
