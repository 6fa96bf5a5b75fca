"""``acode verify [FEATURE]``: the reference spec's verification steps that need no model,
run against the current server, PASS/FAIL/SKIP per step with a one-line reason; exit 1 when
one fails. The steps are in ``acode.cli.verify_steps``."""

from __future__ import annotations

from typing import Annotated

import typer

from acode.cli.errors import CliError, ExitCode, UsageError
from acode.cli.output import esc, out
from acode.cli.runtime import handles_errors, runtime
from acode.cli.verify_steps import FEATURES, NEEDS_MODEL, Failed, Run


@handles_errors
def verify(
    ctx: typer.Context,
    feature: Annotated[
        str, typer.Argument(help=f"What to verify: {', '.join(FEATURES)}.")
    ] = "roles",
    step: Annotated[
        list[int] | None, typer.Option("--step", help="Only these step numbers (repeatable).")
    ] = None,
) -> None:
    """Run the spec's verification steps that need no model against the server: PASS or
    FAIL per step with why (steps that need a model are SKIPped). Makes one session for
    the steps, titled "acode verify", without making it current. Exits 1 if a step fails."""
    if feature.lower() not in FEATURES:
        raise UsageError(f"Unknown feature {feature!r}; known: {', '.join(FEATURES)}.")
    what, steps = FEATURES[feature.lower()]
    chosen = [s for s in steps if not step or s.number in step]
    console = out()
    failed = passed = skipped = 0
    with runtime(ctx).client() as client:
        console.print(f"Verifying {esc(what)} against {esc(client.settings.url)}")
        run = Run(client)
        for item in chosen:
            head = f"{item.number:>2}. {item.title}"
            if item.check is None:
                skipped += 1
                console.print(f"[yellow]SKIP[/] {esc(head)}: {esc(NEEDS_MODEL)}")
                continue
            try:
                why = item.check(run)
            except (Failed, CliError) as problem:
                failed += 1
                console.print(f"[bold red]FAIL[/] {esc(head)}: {esc(_one_line(problem))}")
                continue
            passed += 1
            console.print(f"[green]PASS[/] {esc(head)}: {esc(why)}")
    if run.session_id:
        console.print(f"Session used: {esc(run.session_id)}")
    console.print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if failed:
        raise typer.Exit(ExitCode.OTHER)


def _one_line(problem: Exception) -> str:
    code = getattr(problem, "code", "")
    text = " ".join(str(problem).split())
    return f"{code} {text}".strip() if code and code not in text else text
