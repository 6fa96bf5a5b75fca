"""A job's events: appended in order, one INSERT each, pushed live after commit."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from sessions_app.models import Job, JobEvent
from sessions_app.services.audit import publish_job_event

_next_seq: OrderedDict[Any, int] = OrderedDict()  # job id -> last seq written by this process
_seq_lock = threading.Lock()


def job_event(job: Job, kind: str, data: dict[str, Any]) -> JobEvent:
    """Append an event to a job (ordered) and push it live after commit.

    The last sequence number is remembered per process, so an event is one INSERT; a
    concurrent writer (another process cancelling, say) is caught by the unique
    constraint, and the number is read again.
    """
    for _ in range(5):
        with _seq_lock:
            last = _next_seq.get(job.pk)
        if last is None:
            last = job.events.aggregate(m=Max("seq"))["m"] or 0
        try:
            if connection.in_atomic_block:
                with transaction.atomic():  # a savepoint, so a clash does not spoil the caller
                    event = JobEvent.objects.create(job=job, seq=last + 1, kind=kind, data=data)
            else:
                event = JobEvent.objects.create(job=job, seq=last + 1, kind=kind, data=data)
        except IntegrityError:
            with _seq_lock:
                _next_seq.pop(job.pk, None)
            continue
        with _seq_lock:
            _next_seq[job.pk] = event.seq
            _next_seq.move_to_end(job.pk)
            while len(_next_seq) > 1000:
                _next_seq.popitem(last=False)
        break
    else:  # pragma: no cover
        raise RuntimeError("could not append a job event")
    transaction.on_commit(lambda: publish_job_event(job.session_id, job.pk, event.seq, kind, data))
    return event
