"""``acode role replay SLUG``: preview a role change against its recorded tool decisions
(POST /api/roles/<slug>/replay/): the draft from a YAML file and/or ``--set key=value``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from acode.cli.commands import roles as roles_commands
from acode.cli.errors import UsageError
from acode.cli.output import esc, out

# The change a command previews (replay, diff): a YAML file of role fields and/or --set pairs.
ChangeFileOption = Annotated[
    Path | None,
    typer.Option("--file", "-f", help="YAML mapping of the role fields to change."),
]
ChangeSetsOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="key=value (value as YAML), e.g. write_paths='[src/**]'."),
]


def draft_of(file: Path | None, sets: list[str]) -> dict[str, Any]:
    """The draft changes: a YAML mapping of role fields (``file``), then each ``key=value``
    (the value read as YAML: ``--set write_paths='[src/**]'``, ``--set max_llm_calls=5``)."""
    draft: dict[str, Any] = {}
    if file is not None:
        try:
            loaded = yaml.safe_load(roles_commands.read_text_input(file)) or {}
        except yaml.YAMLError as exc:
            raise UsageError(f"{file} is not YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise UsageError(f"{file} must hold a mapping of role fields (e.g. write_paths: [...])")
        draft.update(loaded)
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set takes key=value, not {item!r}")
        try:
            draft[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError as exc:
            raise UsageError(f"--set {key}: the value is not YAML: {exc}") from exc
    return draft


def print_replay_report(report: dict[str, Any]) -> None:
    """Counts, then each group with its examples (audit row ids), then failing examples."""
    console = out()
    window = f"{report['since'] or 'the beginning'} to {report['until'] or 'now'}"
    console.print(
        f"Role {esc(report['role'])}: {report['decisions']} recorded decision(s), {window}"
    )
    console.print(
        f"  replayed {report['replayed']}: {report['unchanged']} unchanged, "
        f"{report['allowed_to_denied']} allowed -> denied, "
        f"{report['denied_to_allowed']} denied -> allowed; "
        f"not replayable {report['not_replayable']}"
    )
    for item in report["not_replayable_reasons"]:
        console.print(f"    {item['count']} not replayable: {esc(item['reason'])}")
    for group in report["groups"]:
        rule = group["reason"] if group["change"] == "not replayable" else group["rule"]
        console.print(
            f"{esc(group['change'])}  {esc(group['tool'])}: {group['count']} "
            f"(recorded rule {esc(repr(group['recorded_rule']))}, now {esc(repr(rule))})"
        )
        for ex in group["examples"]:
            why = f": {esc(ex['reason'])}" if ex["reason"] else ""
            console.print(f"    audit #{ex['audit_id']} {esc(ex['target'])}{why}")
    failing = report["examples_failing"]
    for item in failing:
        console.print(
            f"[red]FAIL[/] {esc(item['role'])} {esc(item['example'])}: {esc(item['call'])} -> "
            f"{item['decision']} by {esc(repr(item['rule']))} (expected {item['expect']})"
        )
    if failing:
        console.print(f"{len(failing)} example(s) of the draft fail: saving it would be refused")
