"""The sessions app's readiness checks, registered from its ``AppConfig.ready()`` into
``acode.readiness`` (``/readyz``): ``""`` when all is well, else the problem."""

from __future__ import annotations

from acode.workers import queues_with_consumers, tracks_workers
from roles.registry import registry
from sessions_app.containment import sandbox_available, sandbox_required


def sandbox_problem() -> str:
    """Agent commands can run in the OS sandbox, with a copy-on-write layer."""
    if not sandbox_required():
        return "ACODE_SANDBOX=off: agent commands run without the OS sandbox"
    status = sandbox_available()
    if not status.available:
        return status.reason
    return "" if status.overlay else status.overlay_reason


def workers_problem() -> str:
    """A live worker consumes every queue a role routes jobs to."""
    if not tracks_workers():
        return ""  # tasks run eagerly, in this process
    registry.sync()
    needed = {role.spec.queue for role in registry.list_roles() if role.spec.queue}
    missing = sorted(needed - queues_with_consumers())
    if missing:
        return f"no live worker consumes queue(s) {', '.join(missing)}: their jobs would wait"
    return ""
