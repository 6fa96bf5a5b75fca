"""``manage.py acode_demo [--url URL]``: set up the demo (``sessions_app.management.demo``) and print
what to do next; ``make demo`` runs it before it starts the services."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions_app.management.demo import demo_guide, demo_setup


class Command(BaseCommand):
    help = "Set up the demo: scripted model endpoints, two users, two sessions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8100/", help="The server's URL.")

    def handle(self, *args: Any, **options: Any) -> None:
        world = demo_setup()
        for line in demo_guide(world, options["url"]):
            self.stdout.write(line)
