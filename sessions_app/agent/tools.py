"""The tool implementations, bound to the tools ``roles.tools`` declares.

A declaration owns a tool's name, argument schema, permissions and whether it writes; this
module binds each declared name to the code that runs it (``TOOL_IMPLEMENTATIONS``) and
refuses to load when a declared tool has no implementation or an implementation no
declaration. Only ``sessions_app.agent.executor`` calls these, after every check passed,
with the arguments as the check normalised them (paths workspace-relative, commands
checked argument lists): an implementation never normalises or checks them again.

Files are opened only through ``safefs`` (no link followed, no hard-linked file, never
``.git``), searched through ``safegrep`` (linear time, over what the role may see of each
file), and changed only through the ``WorkspaceWriter``. What a tool shows of a file is
what every process acode starts sees of it (the one view: a file secret by name shows
nothing, one holding secrets its redacted form). Commands run only in the sandbox, in the
view ``process_view`` makes, writing to a copy-on-write layer whose content the server
applies, as far as the role may write, once the command is over. The search tools
(``semantic_search``, ``search_code``, ``find_references``) ask the workspace's index
(``services.search_index``), which holds the files as that view shows them to a role that
does not read secrets (so a role that does still gets redacted excerpts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from roles.tools import declared_tools
from sessions_app.agent.commands import (
    OUTPUT_CAP,
    command_env,
    command_ro_paths,
    execute_command,
    run_tests,
)
from sessions_app.agent.toolkit import ToolContext, ToolResult
from sessions_app.containment import (
    DEFAULT_SKIP_DIRS,
    Refused,
    WorkspaceFS,
    is_binary,
    is_secret_file,
    redact_file,
    redact_text,
    search,
)
from sessions_app.services.delegation import block_text
from sessions_app.services.search_index import (
    SearchAnswer,
    search_globs,
    search_text,
    workspace_search,
    workspace_symbols,
)

__all__ = [
    "OUTPUT_CAP",
    "TOOL_IMPLEMENTATIONS",
    "ToolContext",
    "ToolImpl",
    "ToolResult",
    "command_env",
    "command_ro_paths",
]

READ_CAP = 200_000


GREP_FILE_CAP = 1 << 20
EXCERPT_LINES = 8


@dataclass(frozen=True)
class ToolImpl:
    """The code that runs one declared tool, given the normalised arguments."""

    name: str
    run: Callable[[ToolContext, dict[str, Any]], ToolResult]


def _shown(ctx: ToolContext, rel: str, text: str) -> str:
    """What the role sees of a file's text: the one view's (nothing of a secret file, the
    rest with its secrets masked), unless the role may read secrets."""
    return text if ctx.read_secrets else redact_file(rel, text)


def read_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    rel = args["path"]
    with WorkspaceFS(ctx.workspace) as fs:
        data = fs.read_bytes(rel, READ_CAP + 1, truncate=True)
    if is_binary(data):
        raise Refused(f"{rel!r} is a binary file")
    text = data[:READ_CAP].decode("utf-8", "replace")
    shown = _shown(ctx, rel, text)
    if len(data) > READ_CAP:
        shown += f"\n[truncated at {READ_CAP} bytes]"
    return ToolResult(shown, rel, f"{len(text)} characters read")


def list_directory(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    rel = args.get("path", ".")
    with WorkspaceFS(ctx.workspace) as fs:
        entries = fs.list_dir(rel)
    lines = []
    for entry in entries:
        name = entry.path.rsplit("/", 1)[-1]
        if entry.kind == "dir":
            lines.append(f"{name}/")
        elif entry.kind == "symlink":
            lines.append(f"{name} -> (symlink)")
        elif entry.kind == "other":
            lines.append(f"{name}  (special file)")
        elif not ctx.read_secrets and is_secret_file(entry.path):
            lines.append(f"{name}  (holds secrets: not shown)")  # not even its length
        else:
            lines.append(f"{name}  ({entry.size} bytes)")
    return ToolResult("\n".join(lines) or "(empty)", rel, f"{len(lines)} entries")


class _ScopedFS(WorkspaceFS):
    """A ``WorkspaceFS`` whose walk of a file path yields that file (grep on one file)."""

    def walk(self, rel: str = ".", skip_dirs: frozenset[str] = DEFAULT_SKIP_DIRS) -> Iterator[str]:
        if rel != "." and self.stat(rel).kind == "file":
            yield rel
            return
        yield from super().walk(rel, skip_dirs)


def grep_search(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    rel = args.get("path", ".")
    limit = int(args.get("max_results", 100))

    def shown(path: str, data: bytes) -> bytes | None:
        # Searched as the role sees it: a match never reveals a hidden value.
        if ctx.read_secrets:
            return data
        if is_secret_file(path):
            return None
        return redact_text(data.decode("utf-8", "replace"), path=path).encode("utf-8")

    with _ScopedFS(ctx.workspace) as fs:
        found = search(
            fs, str(args.get("pattern", "")), rel=rel, max_matches=limit,
            max_file_bytes=GREP_FILE_CAP, shown=shown,
        )  # fmt: skip
    hits = [f"{m.path}:{m.line_number}: {m.line[:300]}" for m in found.matches]
    return ToolResult("\n".join(hits) or "(no matches)", rel, f"{len(hits)} matches")


def _globs(args: dict[str, Any]) -> tuple[str, ...]:
    """The ``paths`` globs, checked as a path argument is (``Refused``: denied, audited)."""
    return search_globs(args.get("paths") or ())


def _headed(answer: SearchAnswer, lines: list[str], none: str) -> str:
    """Results with the index's progress first when it is not complete."""
    head = [f"({answer.note})"] if answer.note else []
    return "\n".join(head + (lines or [none]))


def semantic_search(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    query, limit = search_text(args["query"], "query"), int(args.get("limit", 10))
    answer = workspace_search(ctx.workspace, query, globs=_globs(args), limit=limit)
    lines = []
    for rank, hit in enumerate(answer.hits, 1):
        excerpt = "\n".join("    " + line for line in hit.excerpt.splitlines()[:EXCERPT_LINES])
        lines.append(f"{rank}. {hit.path}:{hit.start_line}-{hit.end_line} ({hit.why})\n{excerpt}")
    return ToolResult(_headed(answer, lines, "(no matches)"), query[:200],
                      f"{len(answer.hits)} result{'' if len(answer.hits) == 1 else 's'}", {"index": answer.progress.state})  # fmt: skip


def _symbols(ctx: ToolContext, args: dict[str, Any], name: str, *, references: bool) -> ToolResult:
    limit = int(args.get("limit", 100 if references else 50))
    answer = workspace_symbols(ctx.workspace, name, globs=_globs(args), limit=limit,
                               references=references)  # fmt: skip
    lines = [
        f"{s.path}:{s.line}: {s.kind} of {s.symbol} ({s.language}): "
        f"{s.excerpt.strip().splitlines()[0][:300] if s.excerpt.strip() else ''}"
        for s in answer.symbols
    ]
    return ToolResult(_headed(answer, lines, f"(no {'references to' if references else 'definitions of'} {name})"),
                      name[:200], f"{len(answer.symbols)} found", {"index": answer.progress.state})  # fmt: skip


def search_code(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return _symbols(ctx, args, search_text(args["name"], "name"), references=False)


def find_references(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return _symbols(ctx, args, search_text(args["symbol"], "symbol"), references=True)


def analyze_diff(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    only = args.get("path") or ""
    diffs = {p: d for p, d in ctx.pending_diffs.items() if not only or p == only}
    text = "\n".join(_shown_diff(ctx, p, d) for p, d in sorted(diffs.items()))
    if not only:  # the model has now seen every pending change as it is
        ctx.review.shown = ctx.review.current
    details = {"digest": ctx.review.current} if not only else {}
    return ToolResult(text or "(no pending changes)", only or "pending changes",
                      f"{len(diffs)} changed files", details)  # fmt: skip


def _shown_diff(ctx: ToolContext, path: str, diff: str) -> str:
    """A pending diff as the role sees the file: none of a secret file's lines."""
    if not ctx.read_secrets and is_secret_file(path):
        return f"--- {path}\n+++ {path}\n[REDACTED: {path} holds secrets; its diff is not shown]"
    return diff if ctx.read_secrets else redact_text(diff)


def _write(ctx: ToolContext, args: dict[str, Any], *, create: bool) -> ToolResult:
    rel, content = args["path"], args["content"]
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused("the content is not valid UTF-8 (it has a lone surrogate)") from None
    with WorkspaceFS(ctx.workspace) as fs:
        exists = fs.exists(rel)
    if create and exists:
        raise Refused(f"{rel!r} already exists; use write_file to change it")
    if not create and not exists:
        raise Refused(f"{rel!r} does not exist; use create_file to add it")
    ctx.record_change(ctx.writer.write(rel, data=data))
    verb = "written" if exists else "created"
    return ToolResult(
        f"{rel}: {len(data)} bytes {verb}", rel, f"Success ({len(data)} bytes {verb})",
        {"bytes": len(data)}, untrusted=False,
    )  # fmt: skip


def write_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return _write(ctx, args, create=False)


def create_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return _write(ctx, args, create=True)


def delete_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    rel = args["path"]
    with WorkspaceFS(ctx.workspace) as fs:
        info = fs.stat(rel)  # a missing file fails here, as a tool error
    if info.kind == "dir":
        raise Refused(f"{rel!r} is a directory; only files are deleted")
    if info.kind != "file":
        raise Refused(f"{rel!r} is a {info.kind}: links and special files are never touched")
    ctx.record_change(ctx.writer.delete(rel))
    return ToolResult(f"{rel} deleted", rel, "Success (deleted)", untrusted=False)


def submit_review(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    verdict = args.get("verdict")
    summary = str(args.get("summary", ""))
    shown = {"digest": ctx.review.shown}  # what the Reviewer was shown, recorded
    if verdict == "approve":
        count = ctx.approve_changes(summary, ctx.review.shown)
        return ToolResult(
            f"Approved {count} pending changes.",
            "pending changes",
            f"approved {count}",
            shown,
            untrusted=False,
        )
    if verdict == "request_changes":
        ctx.request_changes(summary, list(args.get("comments", [])))
        return ToolResult(
            "Revision requested; the changes stay pending.",
            "pending changes",
            "revision requested",
            shown,
            untrusted=False,
        )
    raise Refused("verdict must be 'approve' or 'request_changes'")


def ask_human(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    question = str(args.get("question", "")).strip()
    if not question:
        raise Refused("a question is required")
    if ctx.ask_human is None:
        raise Refused(
            "ask_human works only inside a run: nobody is waiting to answer this job. "
            "Decide yourself and say what you assumed."
        )
    remembered = ctx.ask_human(question)
    if remembered is not None:  # a person answered it before (decision memory)
        return ToolResult(remembered, "person", "answered before")
    # Asked: the job ends after this call; the run waits for the answer.
    return ToolResult(
        "Your question was sent to a person. Stop here: the run pauses until they answer, "
        "and you will get the answer in a new request.",
        "person",
        "asked",
        untrusted=False,
    )


def delegate(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Start a sub-agent (``services.delegation``: its role no wider, its budget carved)."""
    if ctx.delegate is None:
        raise Refused("delegate works only inside a job")
    role, task = str(args["role"]), str(args["task"]).strip()
    if not task:
        raise Refused("a task is required")
    child = ctx.delegate(role, task, args.get("llm_calls"))
    return ToolResult(
        f"Sub-agent started in role {role} as job {child}. Use collect to wait for its result.",
        f"role {role}", "delegated", {"child_job": child, "child_role": role}, untrusted=False,
    )  # fmt: skip


def collect(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Wait for sub-agents; their answers reach the model as data (a model wrote them)."""
    if ctx.collect is None:
        raise Refused("collect works only inside a job")
    results = ctx.collect(args.get("jobs"), float(args.get("timeout_seconds", 600)))
    if not results:
        return ToolResult("No sub-agent to collect.", "sub-agents", "none", untrusted=False)
    parts = []
    for r in results:
        refused = "".join(f"\n  refused: {reason}" for reason in r["refused"])
        said = r["result"] or r["error"] or "(no answer)"
        blocked = r.get("blocked")
        if blocked:  # resolved by delegating again; else it climbs when this job ends
            refused += (f"\n  BLOCKED ({blocked['kind']}, {block_text(blocked)}): "
                        f"{blocked['reason']}\n  Resolve it by delegating again (a retry, another "
                        "role, or the task with your answer); otherwise it goes up to your "
                        "parent agent, or a person, when you finish.")  # fmt: skip
        parts.append(f"job {r['job']} ({r['role']}, {r['status']}): {said}{refused}")
    return ToolResult("\n".join(parts), "sub-agents", f"{len(results)} collected",
                      {"jobs": [r["job"] for r in results]})  # fmt: skip


def propose_backlog(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Propose epics and tasks to the project the session plans (``services.backlog_pm``:
    the backlog document's checks; a refusal comes back to the model with its reasons)."""
    if ctx.propose_backlog is None:
        raise Refused("propose_backlog works only inside a job")
    created = ctx.propose_backlog(dict(args))
    waiting = [key for key, status in created if status == "proposed"]
    listed = ", ".join(key for key, _ in created) or "none"
    said = (
        f"{len(waiting)} task(s) proposed; a person accepts them."
        if waiting
        else f"{len(created)} task(s) added to the backlog (the project accepts proposals)."
    )
    return ToolResult(f"{said} Keys: {listed}.", "backlog", f"{len(created)} tasks proposed",
                      {"tasks": [key for key, _ in created]}, untrusted=False)  # fmt: skip


def _bind(*implementations: ToolImpl) -> dict[str, ToolImpl]:
    """Implementations by name; the names must be exactly the declared tools' (built-in
    ones: a tool of another ``kind`` is run by that kind's one implementation)."""
    bound = {impl.name: impl for impl in implementations}
    declared = {n for n, d in declared_tools().items() if d.kind == "builtin"}
    if set(bound) != declared:
        raise RuntimeError(
            f"tools declared without an implementation: {sorted(declared - set(bound))}; "
            f"implementations without a declaration: {sorted(set(bound) - declared)}"
        )
    return bound


TOOL_IMPLEMENTATIONS: dict[str, ToolImpl] = _bind(
    ToolImpl("analyze_diff", analyze_diff),
    ToolImpl("ask_human", ask_human),
    ToolImpl("collect", collect),
    ToolImpl("create_file", create_file),
    ToolImpl("delegate", delegate),
    ToolImpl("delete_file", delete_file),
    ToolImpl("execute_command", execute_command),
    ToolImpl("find_references", find_references),
    ToolImpl("grep_search", grep_search),
    ToolImpl("list_directory", list_directory),
    ToolImpl("propose_backlog", propose_backlog),
    ToolImpl("read_file", read_file),
    ToolImpl("run_tests", run_tests),
    ToolImpl("search_code", search_code),
    ToolImpl("semantic_search", semantic_search),
    ToolImpl("submit_review", submit_review),
    ToolImpl("write_file", write_file),
)
