"""``acode changes [show|approve|patch]``: the current session's pending changes, and what
it delivered (the commits approved work became on its branch, and how to get them).

Uses ``GET /api/sessions/{id}/changes/``, ``GET /api/sessions/{id}/commits/``,
``GET /api/sessions/{id}/patch/`` and ``POST /api/sessions/{id}/changes/approve/``
(approving needs a role holding ``approve_changes``, such as Reviewer; it commits the
changes on the session branch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from acode.cli.client import ApiClient
from acode.cli.output import emit_json, esc, fmt_time, out, plural
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    one_starting_with,
    session_client,
)

app = typer.Typer(
    help="The current session's pending changes (show them with diffs, approve them) and "
    "what it delivered (commits on its branch, as a patch).",
)

SHOWN_COMMITS = 10
DIGEST_HEADER = "Acode-Changes-Digest"  # the API's: the digest of the changes it listed
PUSH_WORDS = {"pending": "Pushing", "pushed": "Pushed", "failed": "Push failed"}


def print_commit(
    console: Console, commit: dict[str, Any], *, indent: str = "", label: str = "Delivered: commit"
) -> None:
    """A delivered commit: sha, branch, message, files, push, and how to get it (or an
    approval in an attached directory: applied there, not committed)."""
    if commit.get("committed") is False:
        print_applied(console, commit, indent=indent)
        return
    short = str(commit["sha"])[:12]
    console.print(f"{indent}{label} [bold]{esc(short)}[/] on branch {esc(commit['branch'])}")
    _print_approval(console, commit, indent=indent, files_heading="Files changed")
    status = str(commit.get("push_status") or "none")
    if status == "pushed":
        console.print(
            f"{indent}  Pushed as {esc(commit['branch'])} to {esc(commit['push_remote'])}"
        )
    elif status == "failed":
        console.print(
            f"{indent}  [bold red]Push failed[/] to {esc(commit['push_remote'])} (the commit "
            f"stands on the session branch): {esc(commit['push_message'])}"
        )
    elif status == "pending":
        console.print(f"{indent}  Pushing to {esc(commit['push_remote'])}")
    console.print(
        f"{indent}  Get it: acode changes patch --commit {esc(short)} -o {esc(short)}.patch "
        "(then git am it)"
    )


def print_applied(console: Console, commit: dict[str, Any], *, indent: str = "") -> None:
    """An approval in an attached directory: the files are there; nothing was committed."""
    console.print(
        f"{indent}Approved in the attached directory (the changes are there, applied when "
        "made; acode commits only in workspaces it created): nothing was committed"
    )
    _print_approval(console, commit, indent=indent, files_heading="Files")


def _print_approval(
    console: Console, commit: dict[str, Any], *, indent: str, files_heading: str
) -> None:
    """What an approval holds: its subject, who approved it when, and each file changed."""
    console.print(f"{indent}  {esc(commit['subject'])}")
    console.print(
        f"{indent}  Approved by {esc(commit['approved_by'])} at {fmt_time(commit.get('created_at'))}"
    )
    files = commit.get("files") or []
    console.print(f"{indent}  {files_heading} ({len(files)}):")
    for f in files:
        console.print(
            f"{indent}    {esc(f['kind']):<9} {esc(f['path'])}  +{f['added']} -{f['removed']}"
        )


@app.callback(invoke_without_command=True)
def default(ctx: typer.Context) -> None:
    """Without a subcommand: ``acode changes show``."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(show, ctx=ctx)


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    diff: Annotated[bool, typer.Option("--diff", help="Print each change's diff.")] = False,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the session's pending (uncommitted) changes, then what it delivered.

    `--json` prints the pending changes (`acode changes delivered --json`: the commits)."""
    with session_client(ctx, session) as (client, sid):
        changes, headers = client.get_with_headers(f"/api/sessions/{sid}/changes/")
        commits: list[dict[str, Any]] = [] if as_json else client.get(_commits(sid))
    if as_json:
        emit_json(changes)
        return
    console = out()
    if not changes:
        console.print("No pending changes.")
    else:
        console.print(f"Pending changes: {plural(len(changes), 'file')}")
    for change in changes:
        console.print(
            f"  {esc(change['kind']):<9} {esc(change['path'])}  (by "
            f"{esc(change.get('role') or '-')}, {fmt_time(change.get('updated_at'))})"
        )
    if diff:
        for change in changes:
            console.print()
            console.print(f"[bold]{esc(change['path'])}[/]")
            # Diffs go out verbatim: markup-escaped, never highlighted or wrapped.
            console.print(escape(change.get("diff") or "(no diff)"), soft_wrap=True)
    if changes:
        digest = headers.get(DIGEST_HEADER, "")
        console.print(
            f"Digest {esc(digest)}: approve exactly these with "
            f"`acode changes approve --digest {esc(digest)}`",
            soft_wrap=True,
        )
    if commits:
        console.print()
        print_delivered(console, commits)


@app.command("delivered")
@handles_errors
def delivered(
    ctx: typer.Context, session: SessionOption = None, as_json: JsonOption = False
) -> None:
    """What the session delivered: the commits approved work became on its branch."""
    with session_client(ctx, session) as (client, sid):
        commits: list[dict[str, Any]] = client.get(_commits(sid))
    if as_json:
        emit_json(commits)
        return
    if not commits:
        out().print("Nothing delivered yet: approved changes become commits on the session branch.")
        return
    print_delivered(out(), commits)


def _commits(session_id: str) -> str:
    return f"/api/sessions/{session_id}/commits/"


def print_delivered(console: Console, commits: list[dict[str, Any]]) -> None:
    made = [c for c in commits if c.get("committed") is not False]
    if made:
        console.print(f"Delivered: {plural(len(made), 'commit')}, newest first")
    else:
        console.print(f"Approved: {plural(len(commits), 'time')}, newest first (not committed)")
    for commit in commits[:SHOWN_COMMITS]:
        print_commit(console, commit, indent="  ", label="Commit")
    if len(commits) > SHOWN_COMMITS:
        console.print(f"  … and {len(commits) - SHOWN_COMMITS} earlier (`--json` lists all)")
    if made:
        console.print("The whole branch: acode changes patch -o branch.patch")


@app.command("approve")
@handles_errors
def approve(
    ctx: typer.Context,
    summary: Annotated[
        str, typer.Option("--summary", "-m", help="Commit message summary (recorded).")
    ] = "",
    digest: Annotated[
        str | None,
        typer.Option(
            "--digest",
            help="The digest of the changes you reviewed (`acode changes show` prints it; "
            "default: the changes listed now, shown before they are approved).",
        ),
    ] = None,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Approve the pending changes you reviewed (Reviewer role): committed on the session
    branch in a workspace acode manages; in an attached directory they are already there.
    If they changed since you looked, nothing is approved (ACODE-CHG-002)."""
    with session_client(ctx, session) as (client, sid):
        if not digest:
            listed, headers = client.get_with_headers(f"/api/sessions/{sid}/changes/")
            digest = headers.get(DIGEST_HEADER, "")
            if not as_json and listed:
                out().print(
                    f"Approving {plural(len(listed), 'pending change')} (digest "
                    f"{esc(digest[:12])}): "
                    + ", ".join(esc(c["path"]) for c in listed[:10])
                    + (" …" if len(listed) > 10 else "")
                )
        body = {"summary": summary, "digest": digest}
        result: dict[str, Any] = client.post(f"/api/sessions/{sid}/changes/approve/", body)
        count = int(result.get("approved") or 0)
        commits: list[dict[str, Any]] = client.get(_commits(sid)) if count else []
    if as_json:
        emit_json(result)
        return
    if not count:
        out().print("No pending changes to approve.")
        return
    out().print(f"[bold green][SUCCESS][/] Approved {plural(count, 'pending change')}; "
                f"{esc(result.get('outcome') or '')}")  # fmt: skip
    newest = commits[0] if commits else {}
    if result.get("commit") and newest.get("sha") == result["commit"]:
        print_commit(out(), newest)
    elif not result.get("commit") and newest.get("committed") is False:
        print_applied(out(), newest)


def _resolve_commit(client: ApiClient, sid: str, commit: str) -> str:
    """A full commit id the session delivered: the id, or the one that starts with it."""
    commits: list[dict[str, Any]] = client.get(_commits(sid))
    return one_starting_with(
        commit,
        (c["sha"] for c in commits),
        what="commit of this session",
        suggestion="Run `acode changes show` to see the session's commits.",
    )


@app.command("patch")
@handles_errors
def patch(
    ctx: typer.Context,
    commit: Annotated[
        str | None,
        typer.Option(
            "--commit", "-c", help="Only this delivered commit (its id or first characters)."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="File to write (default: stdout).", show_default=False),
    ] = None,
    session: SessionOption = None,
) -> None:
    """What the session delivered as a patch (`git am` applies it): the whole branch, or
    one commit."""
    with session_client(ctx, session) as (client, sid):
        params = {"commit": _resolve_commit(client, sid, commit)} if commit else None
        text = client.get_text(f"/api/sessions/{sid}/patch/", params=params)
    if output is None:
        typer.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    if not text.strip():
        out().print(f"Nothing delivered yet; wrote an empty {esc(output)}.")
        return
    # soft_wrap: a path broken over two lines cannot be pasted
    out().print(
        f"Wrote the patch to {esc(output)}; apply it with `git am {esc(output)}`.", soft_wrap=True
    )
