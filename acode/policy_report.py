"""A policy examples report in words (``roles.portability.examples.policy_report``'s
data): what ``manage.py acode_policy_test`` writes and ``acode role test`` prints, here
because the CLI imports no app."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def report_lines(
    report: Mapping[str, Any],
    *,
    marks: tuple[str, str] = ("ok  ", "FAIL"),
    escape: Callable[[str], str] = str,
) -> list[str]:
    """One line per example (failures with why and their reason), then a total.
    ``marks`` are a pass's and a failure's; ``escape`` is applied to the examples' text
    (the CLI's console markup)."""
    lines = []
    for item in report["results"]:
        mark = marks[0] if item["passed"] else marks[1]
        name = f" ({item['name']})" if item["name"] else ""
        lines.append(
            f"{mark} {escape(item['role'])} {escape(item['example'])}{escape(name)}: "
            f"{escape(item['call'])} -> {item['decision']} by {escape(repr(item['rule']))} "
            f"(expected {item['expect']})"
        )
        if not item["passed"]:
            lines.append(f"     why: {escape(item['why'])}")
            if item["reason"]:
                lines.append(f"     reason: {escape(item['reason'])}")
    verdict = "all pass" if report["passed"] else f"{report['failed']} failed"
    lines.append(f"{report['examples']} example(s): {verdict}")
    return lines
