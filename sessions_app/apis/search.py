"""Searching a session's workspace (issue 38): by meaning and words, or by symbol.

The same index and the same view as the agents' ``semantic_search``, ``search_code`` and
``find_references`` tools (``services.search_index``): no file secret by its name, every
excerpt redacted. A person's search is not audited: it is a read of the session like its
history, plan or patch (those are not audited either), and shows less than the patch does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from acode.errors import error_responses
from acode.inputs import Input, Text, body_of
from sessions_app.apis.common import INVALID_CODES, NOT_VISIBLE_CODES, SessionActionApi
from sessions_app.permissions import SessionAction, action_check, session_for
from sessions_app.services.search_index import (
    GLOB_REFUSED,
    MODES,
    SearchAnswer,
    workspace_search,
    workspace_symbols,
)

KINDS = ("text", "definitions", "references")
GLOB_PATTERN = r"^[^/\x00][^\x00]*$"  # relative: never starts with "/"


class SearchInput(Input):
    query = Text(max_length=2000, help_text="What to look for: words, a question, or a symbol "
                 "name for `definitions` and `references`.")  # fmt: skip
    kind = serializers.ChoiceField(
        choices=KINDS, default="text",
        help_text="text: ranked file ranges by meaning and words; definitions: where the "
        "symbol is defined; references: where it is defined and used.",
    )  # fmt: skip
    mode = serializers.ChoiceField(
        choices=MODES, default="hybrid",
        help_text="For text: hybrid (embeddings and BM25), bm25 (words) or embedding.",
    )  # fmt: skip
    paths = serializers.ListField(
        # A path's component is at most 255 bytes, so a glob longer than that would need a
        # "/" to be valid; what else a path may not be (``..``, ``.git``) is ACODE-SRC-001.
        child=Text(max_length=255, pattern=GLOB_PATTERN), max_length=20, default=list,
        help_text="Only files matching one of these globs, relative to the workspace.",
    )  # fmt: skip
    limit = serializers.IntegerField(min_value=1, max_value=50, default=10)


class IndexOutput(serializers.Serializer):
    state = serializers.ChoiceField(choices=["missing", "building", "ready", "failed"])
    files_indexed = serializers.IntegerField()
    files_total = serializers.IntegerField()
    error = serializers.CharField()
    note = serializers.CharField(help_text="The index's state in words; empty when complete.")


class HitOutput(serializers.Serializer):
    path = serializers.CharField()
    start_line = serializers.IntegerField()
    end_line = serializers.IntegerField()
    excerpt = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    why = serializers.CharField()
    kind = serializers.CharField(help_text="text, definition or reference")
    symbol = serializers.CharField()
    language = serializers.CharField()


class SearchOutput(serializers.Serializer):
    hits = HitOutput(many=True)
    index = IndexOutput()


def search_body(answer: SearchAnswer) -> dict[str, Any]:
    """The answer as JSON: text hits and symbol hits in one shape."""
    hits = [
        {"path": h.path, "start_line": h.start_line, "end_line": h.end_line,
         "excerpt": h.excerpt, "score": round(h.score, 4), "why": h.why, "kind": "text",
         "symbol": "", "language": ""}
        for h in answer.hits
    ] + [
        {"path": s.path, "start_line": s.line, "end_line": s.end_line, "excerpt": s.excerpt,
         "score": None, "why": f"{s.kind} of {s.symbol}", "kind": s.kind,
         "symbol": s.symbol, "language": s.language}
        for s in answer.symbols
    ]  # fmt: skip
    progress = answer.progress
    index = {"state": progress.state, "files_indexed": progress.files_indexed,
             "files_total": progress.files_total, "error": progress.error,
             "note": answer.note}  # fmt: skip
    return {"hits": hits, "index": index}


class SessionSearchApi(SessionActionApi):
    actions = {"POST": SessionAction.SEARCH}  # a read with a body: whoever sees the session

    @extend_schema(
        request=SearchInput,
        responses={
            200: SearchOutput,
            **error_responses(*INVALID_CODES, *NOT_VISIBLE_CODES, GLOB_REFUSED),
        },
        operation_id="sessions_search",
        description="Search the session's workspace as its roles see it (no file secret by "
        "its name, excerpts redacted). While the index is being built the hits come from "
        "what is indexed so far and `index.note` says how far it got; before any index "
        "exists a build is queued.",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        action_check(SessionAction.SEARCH, session=session)  # not while archived
        found = body_of(SearchInput, request)
        workspace, kind = Path(session.workspace), found["kind"]
        if kind == "text":
            answer = workspace_search(workspace, found["query"], globs=found["paths"],
                                      limit=found["limit"], mode=found["mode"])  # fmt: skip
        else:
            answer = workspace_symbols(workspace, found["query"], globs=found["paths"],
                                       limit=found["limit"], references=kind == "references")  # fmt: skip
        return Response(search_body(answer))
