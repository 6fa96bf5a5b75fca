"""Celery: the broker is Redis when ``REDIS_URL`` is set, else tasks run eagerly in-process."""

from __future__ import annotations

from acode.settings.base import VAR_DIR
from acode.settings.env import env_bool, env_float, env_int, env_optional, env_str
from acode.settings.redis import REDIS_URL

CELERY_BROKER_URL = env_optional("CELERY_BROKER_URL") or REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = env_optional("CELERY_RESULT_BACKEND") or REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", REDIS_URL is None)
CELERY_TASK_DEFAULT_QUEUE = env_str("ACODE_DEFAULT_QUEUE", "agents")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A broker outage does not stop the jobs in flight: they live in the database, and their
# end needs no broker (the next stage's job waits for it). Celery 6 would cancel them.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A job whose worker stops sending heartbeats for this long is requeued (once) or failed.
ACODE_JOB_HEARTBEAT_SECONDS = env_float("ACODE_JOB_HEARTBEAT_SECONDS", 10.0)
ACODE_JOB_STALE_SECONDS = env_float("ACODE_JOB_STALE_SECONDS", 60.0)
# A call a rule puts to a person ("outcome": "ask") waits this long for an answer, then is
# denied; the waiting job looks for the answer this often (its worker waits with it).
ACODE_CONSENT_TIMEOUT_SECONDS = env_float("ACODE_CONSENT_TIMEOUT_SECONDS", 900.0)
ACODE_CONSENT_POLL_SECONDS = env_float("ACODE_CONSENT_POLL_SECONDS", 1.0)
# How long an outside agent's hook (Codex, any agent that cannot ask its user) waits for a
# person's answer to a call a rule asks about: under the hook's own time limit (the settings
# `acode agents connect` writes give the hook 60 s).
ACODE_HOOK_ASK_SECONDS = env_float("ACODE_HOOK_ASK_SECONDS", 45.0)
# A job queued this long without starting gets its message sent again (a worker may have
# died holding it); duplicates are skipped when they arrive.
ACODE_JOB_RESEND_SECONDS = env_float("ACODE_JOB_RESEND_SECONDS", ACODE_JOB_STALE_SECONDS * 5)
# Redis delivers again a message a worker took and never acknowledged (it was killed
# mid-job) this long after it was taken; workers look for such messages every tenth of it
# (no less often than every 10 s, no more than every second). Keep it above the longest
# job. Any second delivery ends in job_start with a log line and changes nothing.
ACODE_BROKER_VISIBILITY_SECONDS = env_float("ACODE_BROKER_VISIBILITY_SECONDS", 3600.0)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": ACODE_BROKER_VISIBILITY_SECONDS,
    "unacked_restore_interval": max(1.0, min(10.0, ACODE_BROKER_VISIBILITY_SECONDS / 10)),
    "unacked_restore_throttle": 1,
}
ACODE_AUDIT_ANCHOR_SECONDS = env_float("ACODE_AUDIT_ANCHOR_SECONDS", 300.0)
ACODE_AUDIT_VERIFY_SECONDS = env_float("ACODE_AUDIT_VERIFY_SECONDS", 3600.0)
# The backlog's scheduler: how often tasks follow their runs and ready ones start.
ACODE_BACKLOG_TICK_SECONDS = env_float("ACODE_BACKLOG_TICK_SECONDS", 5.0)
# It starts no task whose run's first stage would join a worker queue that already holds
# this many jobs no worker has taken (0: no limit), so a busy pool is not flooded.
ACODE_BACKLOG_QUEUE_DEPTH = env_int("ACODE_BACKLOG_QUEUE_DEPTH", 4)
# Periodic work, run by Celery beat (embedded in the worker under `make run`: --beat).
CELERY_BEAT_SCHEDULE = {
    "recover-lost-jobs": {"task": "acode.recover_lost_jobs", "schedule": ACODE_JOB_STALE_SECONDS},
    "audit-anchor": {"task": "acode.audit_anchor", "schedule": ACODE_AUDIT_ANCHOR_SECONDS},
    "audit-verify": {"task": "acode.audit_verify", "schedule": ACODE_AUDIT_VERIFY_SECONDS},
    "backlog-schedule": {"task": "acode.backlog_schedule", "schedule": ACODE_BACKLOG_TICK_SECONDS},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
