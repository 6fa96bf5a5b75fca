"""The Celery application; workers are started with ``celery -A acode worker``."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "acode.settings")

app = Celery("acode")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
