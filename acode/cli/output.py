"""How the CLI prints: rich text for people, plain JSON for scripts, errors on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from acode.cli.errors import ApiError, CliError


def out() -> Console:
    """A console on stdout. Made per call so tests' captured streams and COLUMNS apply."""
    return Console(highlight=False)


def err() -> Console:
    """A console on stderr, for errors and progress that must not pollute ``--json``."""
    return Console(stderr=True, highlight=False)


def esc(value: Any) -> str:
    """Server data made safe to embed in rich markup (role reasons may contain ``[``)."""
    return escape(str(value))


def emit_json(data: Any) -> None:
    """Print data as indented JSON, unwrapped, for scripts."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


T = TypeVar("T")


def emit(data: T, *, as_json: bool, render: Callable[[T], None]) -> None:
    """The API's answer as a command prints it: unwrapped JSON for ``--json``, else the
    command's text made by ``render``."""
    if as_json:
        emit_json(data)
    else:
        render(data)


def table(*columns: str, **options: Any) -> Table:
    """A rich table with these column headings (``options`` as rich's Table takes them)."""
    made = Table(**options)
    for column in columns:
        made.add_column(column)
    return made


def ask_to_cancel(what: str) -> bool:
    """Ask on stderr whether to cancel ``what`` after Ctrl-C; a second Ctrl-C means no."""
    try:
        return typer.confirm(f"\nCancel {what}?", default=True, err=True)
    except (KeyboardInterrupt, typer.Abort):
        return False


def parse_time(value: str | None) -> datetime | None:
    """An ISO timestamp from the API, or None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def fmt_time(value: str | None) -> str:
    """A timestamp as the spec shows it: ``2024-01-15 10:30:45 UTC``."""
    parsed = parse_time(value)
    if parsed is None:
        return value or "-"
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def short_id(value: Any) -> str:
    """The first 8 characters of a UUID, as session ids are shown to people."""
    return str(value or "-")[:8]


# Statuses as a person reads them: the API's values (and --json) keep their names.
STATUS_WORDS = {
    "limit_exceeded": "stopped at a limit",
    "in_progress": "in progress",
    "awaiting_input": "waiting for an answer",
    "awaiting_approval": "waiting for approval",
}


def said(status: Any) -> str:
    """A status in words: ``limit_exceeded`` is ``stopped at a limit``."""
    text = str(status or "")
    return STATUS_WORDS.get(text, text.replace("_", " "))


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 tool``, ``3 tools``."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


# -- errors ---------------------------------------------------------------------------
def code_entry(code: str) -> tuple[str, str]:
    """Title and hint of an ACODE code from the server's error table.

    Imported only when an error is printed, so successful commands do not pay for
    loading Django and DRF; the table lives in one place (``acode/error_codes.toml``, read without Django).
    """
    try:
        from acode.error_codes import ERROR_CODES
    except Exception:  # pragma: no cover - only when the server package is broken
        return "", ""
    entry = ERROR_CODES.get(code)
    return (entry.title, entry.hint) if entry else ("", "")


def print_error(error: CliError, *, as_json: bool = False) -> None:
    """Explain an error on stderr: code, title, message, the details that help, suggestion."""
    if as_json:
        typer.echo(json.dumps({"error": error.as_dict()}, indent=2, ensure_ascii=False), err=True)
        return
    console = err()
    if isinstance(error, ApiError):
        title, hint = code_entry(error.code)
        heading = f"[ERROR] {error.code}" + (f" {title}" if title else "")
        console.print(f"[bold red]{esc(heading)}[/]")
        console.print(esc(error.message))
        _print_details(console, error)
        suggestion = error.suggestion or str(error.details.get("suggestion") or "") or hint
        if error.code == "ACODE-ROL-002" and error.details.get("valid_transitions"):
            suggestion = error.suggestion or hint  # the list above already spells it out
    else:
        console.print(f"[bold red]{esc('[ERROR] ' + error.title)}[/]")
        console.print(esc(error.message))
        suggestion = error.suggestion
    if suggestion:
        console.print()
        console.print(f"[yellow]Suggestion:[/] {esc(suggestion)}")


def _print_details(console: Console, error: ApiError) -> None:
    details = error.details
    if error.code == "ACODE-ROL-002":
        _print_refused_transition(console, details)
    fields = details.get("fields")
    if isinstance(fields, dict):
        _print_section(
            console, "", [f"{esc(name)}: {esc(_joined(text))}" for name, text in fields.items()]
        )
    problems = details.get("problems")
    if isinstance(problems, list):
        _print_section(console, "Problems:", [esc(problem) for problem in problems])
    findings = details.get("findings")
    if isinstance(findings, list):
        _print_section(
            console,
            "Dangerous prompt text:",
            [
                f"{esc(f.get('where', ''))} line {esc(f.get('line', '?'))}: "
                f"{esc(f.get('rule', ''))} {esc(repr(f.get('match', '')))}"
                for f in findings
                if isinstance(f, dict)
            ],
        )


def _joined(problems: Any) -> str:
    return "; ".join(map(str, problems)) if isinstance(problems, list) else str(problems)


def _print_section(console: Console, heading: str, lines: Iterable[str]) -> None:
    """A blank line, the heading (if any) and the lines (rich markup) as a list."""
    lines = list(lines)
    if not lines:
        return
    console.print()
    if heading:
        console.print(heading)
    for line in lines:
        console.print(f"  - {line}")


def _print_refused_transition(console: Console, details: dict[str, Any]) -> None:
    """Scenario 6: what was attempted, why not, and which transitions are possible."""
    names = {
        str(t.get("to_role")): str(t.get("to_role_name"))
        for t in details.get("valid_transitions") or []
        if isinstance(t, dict)
    }
    source = str(details.get("from_role") or "?")
    target = str(details.get("to_role") or "?")
    source_name = names.get(source) or source.title()
    target_name = names.get(target) or target.title()
    console.print()
    console.print(f"Attempted: {esc(source_name)} → {esc(target_name)}")
    if details.get("explanation"):
        console.print()
        console.print(f"Explanation: {esc(details['explanation'])}")
    transitions = [t for t in details.get("valid_transitions") or [] if isinstance(t, dict)]
    if transitions:
        console.print()
        console.print(f"Valid transitions from {esc(source_name)}:")
        for t in transitions:
            line = f"  - {source_name} → {t.get('to_role_name')} ({t.get('condition')})"
            if not t.get("allowed_now"):
                line += f" — not now: {t.get('unmet')}"
            console.print(esc(line))


def print_denial(console: Console, reason: str, code: str) -> None:
    """A refusal: the spec's denial block (its first line in red, as the model saw it, the
    code after acode's details) or acode's one line."""
    if reason.startswith("[ERROR] "):
        first, _, rest = reason.partition("\n")
        console.print(f"[bold red]{esc(first)}[/]")
        console.print(f"{esc(rest)} ({esc(code)})" if code else esc(rest))
    else:
        console.print(f"[bold red][DENIED][/] {esc(reason)}" + (f" ({esc(code)})" if code else ""))
