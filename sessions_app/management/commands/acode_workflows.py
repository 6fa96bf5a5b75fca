"""Export workflow templates and risk signals as YAML, or import them from a file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from acode.errors import AcodeError
from acode.yamldoc import dump_yaml
from sessions_app.services.runs.portability import (
    workflows_export,
    workflows_import,
    workflows_load,
)


class Command(BaseCommand):
    help = (
        "Workflow templates and risk signals as YAML: 'export [file]' writes them, "
        "'import file [--replace]' checks a file and writes it (nothing if anything is wrong)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        export = actions.add_parser("export", help="Write the document (default: stdout)")
        export.add_argument("file", nargs="?", help="Output file, or - for standard output")
        imported = actions.add_parser("import", help="Check and import a document")
        imported.add_argument("file", help="YAML file, or - for standard input")
        imported.add_argument(
            "--replace",
            action="store_true",
            help="Also remove signals and templates the file lacks (templates runs used "
            "are disabled instead).",
        )
        imported.add_argument("--actor", default="manage.py acode_workflows", help="For the audit.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "export":
            self.export(options.get("file"))
        else:
            self.import_(options["file"], replace=options["replace"], actor=options["actor"])

    def export(self, file: str | None) -> None:
        text = dump_yaml(workflows_export())
        if file and file != "-":
            Path(file).write_text(text, encoding="utf-8")
            self.stdout.write(f"exported workflow templates and risk signals to {file}")
        else:
            sys.stdout.write(text)

    def import_(self, file: str, *, replace: bool, actor: str) -> None:
        try:
            text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {file}: {exc}") from exc
        try:
            summary = workflows_import(workflows_load(text), replace=replace, actor=actor)
        except AcodeError as exc:
            lines = "\n".join(f"  - {p}" for p in exc.details.get("problems", []))
            raise CommandError(f"{exc.code}: {exc.message}\n{lines}") from exc
        self.stdout.write(
            f"imported {summary.templates} workflow templates ({summary.stages} stages) and "
            f"{summary.signals} risk signals"
        )
        for item in summary.removed:
            self.stdout.write(f"removed {item}")
        for item in summary.disabled:
            self.stdout.write(f"disabled {item} (runs used it)")
