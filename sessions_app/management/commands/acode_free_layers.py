"""``manage.py acode_free_layers``: free this host's layers of archived sessions (a worker
does it when it starts; run it from a timer on a worker host that seldom restarts)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.services.archive import layers_sweep


class Command(BaseCommand):
    help = "Free this host's session layers of archived (or deleted) sessions."

    def handle(self, *args: Any, **options: Any) -> None:
        freed = layers_sweep()
        self.stdout.write(f"Freed the layers of {len(freed)} archived session(s).")
        for session_id in freed:
            self.stdout.write(f"  {session_id}")
