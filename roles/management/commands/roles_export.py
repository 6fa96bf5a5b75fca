from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from acode.yamldoc import dump_yaml
from roles.portability.definitions import export_definitions


class Command(BaseCommand):
    help = "Export roles, tools, permissions, transition rules and prompt packs as YAML."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="Output file (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        text = dump_yaml(export_definitions())
        if options["file"] and options["file"] != "-":
            Path(options["file"]).write_text(text, encoding="utf-8")
            self.stdout.write(f"exported role definitions to {options['file']}")
        else:
            sys.stdout.write(text)
