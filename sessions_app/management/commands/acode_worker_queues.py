"""Print the queues a worker should consume: ``celery -A acode worker -Q $(manage.py acode_worker_queues)``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from roles.registry import registry


def configured_queues() -> set[str]:
    """Every Celery queue a role routes its jobs to, plus the default queue (Celery beat's)
    and the search index's."""
    registry.sync()
    queues = {role.spec.queue for role in registry.list_roles() if role.spec.queue}
    return queues | {settings.CELERY_TASK_DEFAULT_QUEUE, settings.ACODE_SEARCH_QUEUE}


class Command(BaseCommand):
    help = (
        "Print the comma-separated Celery queues the roles route jobs to (and the default "
        "queue), for `celery -A acode worker -Q ...`; --only restricts them to a subset."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--only",
            default="",
            help="Comma-separated queues this worker pool takes; each must be a configured one.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        queues = configured_queues()
        only = {q.strip() for q in str(options["only"]).split(",") if q.strip()}
        if options["only"] and not only:
            raise CommandError("--only names no queue; give e.g. --only agents,planning")
        unknown = only - queues
        if unknown:
            # A typo here would start a pool that waits on a queue no role ever uses.
            raise CommandError(
                f"unknown queue(s) {', '.join(sorted(unknown))}: no role routes jobs there; "
                f"configured queues are {', '.join(sorted(queues))}"
            )
        self.stdout.write(",".join(sorted(only or queues)))
