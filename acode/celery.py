"""The Celery application; workers are started with ``celery -A acode worker``."""

from __future__ import annotations

import os

from celery import Celery

from acode.metrics import connect_worker_metrics
from acode.workers import connect_worker_signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "acode.settings")

app = Celery("acode")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Each worker keeps a key in Redis naming its queues (acode.workers): who consumes what.
connect_worker_signals(app)
# ACODE_WORKER_METRICS_PORT: the worker serves its own Prometheus metrics (acode.metrics).
connect_worker_metrics()
