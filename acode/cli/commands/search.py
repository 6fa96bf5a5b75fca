"""``acode search "…"``: search the current session's workspace (issue 38).

Calls ``POST /api/sessions/{id}/search/``: the index and the view the agents' search tools
use (no file secret by its name, excerpts redacted).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from acode.cli.output import emit_json, esc, out
from acode.cli.runtime import (
    JsonOption,
    SessionOption,
    handles_errors,
    server_must_offer,
    session_client,
)

EXCERPT_LINES = 6


class Mode(StrEnum):
    hybrid = "hybrid"
    bm25 = "bm25"
    embedding = "embedding"


class Kind(StrEnum):
    text = "text"
    definitions = "definitions"
    references = "references"


@handles_errors
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for: words, a question, a symbol.")],
    paths: Annotated[
        list[str] | None,
        typer.Option("--paths", help="Only files matching this glob (repeatable), e.g. 'src/**'."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=50, help="Most results.")] = 10,
    mode: Annotated[
        Mode, typer.Option("--mode", help="hybrid (meaning and words), bm25 or embedding.")
    ] = Mode.hybrid,
    kind: Annotated[
        Kind,
        typer.Option("--kind", help="text; definitions or references of a symbol named QUERY."),
    ] = Kind.text,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search the session's workspace by meaning and words, or a symbol's definitions and
    references."""
    body = {"query": query, "paths": paths or [], "limit": limit, "mode": mode.value,
            "kind": kind.value}  # fmt: skip
    with session_client(ctx, session) as (client, sid):
        lacks = "cannot search yet (POST /api/sessions/{id}/search/ is missing)"
        with server_must_offer(client, lacks=lacks, update="workspace search"):
            data = client.post(f"/api/sessions/{sid}/search/", body)
    if as_json:
        emit_json(data)
        return
    _print(data)


def _print(data: dict[str, Any]) -> None:
    console = out()
    note = (data.get("index") or {}).get("note")
    if note:
        console.print(f"({esc(note)})")
    hits = data.get("hits") or []
    if not hits:
        console.print("No matches.")
    for rank, hit in enumerate(hits, 1):
        where = f"{hit.get('path')}:{hit.get('start_line')}-{hit.get('end_line')}"
        console.print(f"{rank}. [bold]{esc(where)}[/]  {esc(hit.get('why'))}")
        for line in str(hit.get("excerpt") or "").splitlines()[:EXCERPT_LINES]:
            console.print(f"    {esc(line)}", highlight=False)
