"""``manage.py acode_policy_test [FILE]``: run the policy examples of the stored roles, or
of a roles YAML file before it is imported; exits 1 when one fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from acode.errors import AcodeError
from acode.policy_report import report_lines
from roles.portability.document import load_yaml
from roles.portability.examples import policy_report, policy_test


class Command(BaseCommand):
    help = (
        "Run the policy examples of the stored roles, or of a roles YAML file (nothing is "
        "written), with the executor's own decision. Exits 1 when an example fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file", nargs="?", help="YAML file ('-': standard input); none: the stored roles"
        )
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        try:
            document = None
            if source is not None:
                text = sys.stdin.read() if source == "-" else Path(source).read_text("utf-8")
                document = load_yaml(text)
            report = policy_report(policy_test(document))
        except OSError as exc:
            raise CommandError(f"Cannot read {source}: {exc.strerror or exc}") from exc
        except AcodeError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            for line in report_lines(report):
                self.stdout.write(line)
        if not report["passed"]:
            raise CommandError(f"{report['failed']} policy example(s) failed", returncode=1)
