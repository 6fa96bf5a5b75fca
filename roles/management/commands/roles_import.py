from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from acode.errors import AcodeError
from roles.portability.definitions import import_definitions
from roles.portability.document import load_yaml


class Command(BaseCommand):
    help = "Import role definitions from YAML. Everything is validated before anything is written."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="YAML file, or - for standard input")
        parser.add_argument(
            "--replace", action="store_true", help="Also remove definitions the file does not hold."
        )
        parser.add_argument(
            "--actor", default="import", help="Recorded as who made the role versions."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        try:
            summary = import_definitions(
                load_yaml(text), actor=options["actor"], replace=options["replace"]
            )
        except AcodeError as exc:
            details = exc.details.get("problems") or exc.details.get("findings") or []
            lines = "\n".join(f"  - {d}" for d in details)
            raise CommandError(f"{exc.code}: {exc.message}\n{lines}") from exc
        self.stdout.write(
            f"imported {summary.roles} roles, {summary.tools} tools, {summary.permissions} permissions, "
            f"{summary.rules} rules, {summary.prompt_components} prompts; "
            f"{len(summary.versions)} new role versions"
        )
        for item in summary.removed:
            self.stdout.write(f"removed {item}")
        for item in summary.drafts:
            self.stdout.write(f"kept as {item}: the role is protected, another admin publishes it")
