"""A workspace's search index (issue 38): where it lives, how it is built and kept fresh,
and how it is asked.

The index holds the workspace as the one view shows it to a role that does not read
secrets: the files ``WorkspaceFS`` walks (no links, no hard-linked files, no ``.git`` or
``DEFAULT_SKIP_DIRS``), never a file secret by its name (``is_secret_file``), every other
one with its secrets masked (``redact_text``, as ``read_file`` and ``grep_search`` show it);
binary files and files over ``FILE_CAP`` are left out. ``sessions_app.search.CodeIndex`` is
fed that text and never reads the workspace itself. What is asked is checked again on the
way out: a hit in a file that is secret by name now is dropped, and excerpts are redacted
with the secret values known now.

It lives in server state beside the workspace, ``ACODE_INDEX_ROOT/search/<key>`` (the key
a digest of the workspace's real path, as the secret index's), never inside the workspace a
role sees, shared between hosts like the workspaces. A workspace's index is built by a
Celery task when the workspace is created or attached (``search_index_queue``) and when a
search finds none; a change applied to it re-indexes the files it touched once its
transaction commits (``search_index_touched``): inline when few, else by the task. Writers
of one index take its lock file in turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from django.conf import settings
from django.db import transaction

from acode.errors import AcodeError
from sessions_app.containment import (
    DEFAULT_SKIP_DIRS,
    Refused,
    WorkspaceFS,
    is_binary,
    is_secret_file,
    redact_text,
    split_path,
    workspace_key,
)
from sessions_app.search import (
    CodeIndex,
    Embedder,
    Hit,
    IndexProgress,
    SymbolHit,
    endpoint_embedder,
)

logger = logging.getLogger(__name__)

FILE_CAP = 1 << 20  # as grep_search: a bigger file is data, not code to search
GLOB_REFUSED = "ACODE-SRC-001"
MODES = ("hybrid", "bm25", "embedding")
Mode = Literal["hybrid", "bm25", "embedding"]
MAX_GLOBS = 20
MAX_QUERY = 2000
REQUEUE_AFTER = 600.0  # a build queued this long ago that never started is queued again


def index_dir(workspace: Path) -> Path:
    """Where the workspace's search index lives (server state, outside the workspace)."""
    return Path(settings.ACODE_INDEX_ROOT) / "search" / workspace_key(workspace)


def search_embedder() -> Embedder | None:
    """The configured embeddings endpoint; None: the packaged model (offline, loaded by
    the index on first use)."""
    if settings.ACODE_EMBEDDINGS_URL:
        return endpoint_embedder(
            settings.ACODE_EMBEDDINGS_URL,
            settings.ACODE_EMBEDDINGS_MODEL,
            settings.ACODE_EMBEDDINGS_API_KEY,
        )
    return None


_OPEN: dict[Path, CodeIndex] = {}


def code_index(workspace: Path) -> CodeIndex:
    """The workspace's index, opened once per process (the embedder loads once)."""
    where = index_dir(workspace)
    found = _OPEN.get(where)
    if found is None:
        where.mkdir(parents=True, exist_ok=True)
        found = _OPEN[where] = CodeIndex(where, embedder=search_embedder())
    return found


def index_progress(workspace: Path) -> IndexProgress:
    """How far the workspace's index got (``missing`` before any build was queued)."""
    if not index_dir(Path(workspace)).is_dir():
        return IndexProgress("missing", 0, 0, "")
    return code_index(Path(workspace)).progress()


@contextlib.contextmanager
def _writing(workspace: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the index's write lock (``False`` when ``wait`` is off and another holds it)."""
    where = index_dir(workspace)
    where.mkdir(parents=True, exist_ok=True)
    fd = os.open(where / "write.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock


def shown_text(fs: WorkspaceFS, rel: str) -> str | None:
    """What the index may hold of a file: its redacted text; None for a file secret by
    name, a binary or huge one, or one that is gone or not a plain file."""
    if is_secret_file(rel):
        return None
    try:
        data = fs.read_bytes(rel, FILE_CAP + 1, truncate=True)
    except (OSError, Refused):
        return None
    if len(data) > FILE_CAP or is_binary(data):
        return None
    return redact_text(data.decode("utf-8", "replace"), path=rel)


def _walk(workspace: Path) -> list[str]:
    with WorkspaceFS(workspace) as fs:
        return list(fs.walk(".", DEFAULT_SKIP_DIRS))


def _texts(workspace: Path, paths: Iterable[str]) -> Iterator[tuple[str, str]]:
    with WorkspaceFS(workspace) as fs:
        for rel in paths:
            text = shown_text(fs, rel)
            if text is not None:
                yield rel, text


def search_index_build(workspace: Path) -> IndexProgress:
    """Index the whole workspace as the view shows it (what was indexed and is gone now
    is removed), recording progress as it goes; a failure is recorded on the index."""
    workspace = Path(workspace)
    if not workspace.is_dir():
        return IndexProgress("missing", 0, 0, "")
    with _writing(workspace):
        return _build(workspace)


def _build(workspace: Path) -> IndexProgress:
    index = code_index(workspace)
    _queued_marker(workspace).unlink(missing_ok=True)
    try:
        paths = _walk(workspace)
        index.begin(len(paths))
        for gone in index.paths() - set(paths):
            index.remove(gone)
        index.put_many(_texts(workspace, paths))
        index.finish()
    except Exception as exc:
        logger.exception("search index of %s failed", workspace)
        index.fail(f"{type(exc).__name__}: {exc}")
    return index.progress()


def search_index_refresh(workspace: Path, paths: Iterable[str], *, locked: bool = False) -> int:
    """Index these files again as they are now (a file gone, or now hidden, is removed);
    an index never built is built whole instead. Returns how many files were looked at.
    ``locked``: the caller holds the index's write lock."""
    workspace = Path(workspace)
    wanted = sorted(set(paths))
    if not workspace.is_dir():  # archived meanwhile (its files freed): nothing to index
        return 0
    with contextlib.nullcontext() if locked else _writing(workspace):
        index = code_index(workspace)
        if index.progress().state in ("missing", "failed"):
            _build(workspace)
            return len(wanted)
        with WorkspaceFS(workspace) as fs:
            for rel in wanted:
                text = shown_text(fs, rel)
                if text is None:
                    index.remove(rel)
                else:
                    index.put(rel, text)
    return len(wanted)


def _queued_marker(workspace: Path) -> Path:
    return index_dir(workspace) / "queued"


def search_index_queue(workspace: Path) -> None:
    """Have a worker build the workspace's index once the current transaction commits
    (a workspace created or attached, a search that found no index)."""
    from sessions_app.tasks import search_index_build_task

    marker = _queued_marker(Path(workspace))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    transaction.on_commit(
        lambda: search_index_build_task.apply_async(
            args=(str(workspace),), queue=settings.ACODE_SEARCH_QUEUE, ignore_result=True
        )
    )


def _built(workspace: Path) -> bool:
    return code_index(workspace).progress().state == "ready"


def search_index_touched(workspace: Path, paths: Iterable[str]) -> None:
    """A change applied to the workspace touched ``paths``: once it commits, index them
    again (here when they are few and no build holds the index, else by a worker)."""
    from sessions_app.tasks import search_index_refresh_task

    workspace, touched = Path(workspace), sorted(set(paths))
    if not touched or not index_dir(workspace).is_dir():
        return  # no index yet: its build will read the files as they are

    def refresh() -> None:
        # Inline only into a built index: a missing or unfinished one is built whole, which
        # is a worker's business, never an apply's (a Coder's first write would wait on it).
        if len(touched) <= settings.ACODE_SEARCH_INLINE_FILES and _built(workspace):
            with _writing(workspace, wait=False) as mine:
                if mine:
                    try:
                        search_index_refresh(workspace, touched, locked=True)
                        return
                    except Exception:  # the worker tries again; the change stands
                        logger.exception("inline re-index of %s failed", workspace)
        search_index_refresh_task.apply_async(
            args=(str(workspace), touched), queue=settings.ACODE_SEARCH_QUEUE, ignore_result=True
        )

    transaction.on_commit(refresh)


def search_globs(raw: Iterable[Any]) -> tuple[str, ...]:
    """Path globs as a path argument is checked: relative, no ``..``, nothing in ``.git``,
    at most ``MAX_GLOBS`` of them (``Refused`` saying why)."""
    globs = list(raw)
    if len(globs) > MAX_GLOBS:
        raise Refused(f"at most {MAX_GLOBS} path globs")
    for glob in globs:
        split_path(glob)
    return tuple(globs)


def search_text(raw: str, what: str) -> str:
    """A query or symbol name: visible, at most ``MAX_QUERY`` characters (``Refused``)."""
    text = str(raw).strip()
    if not text:
        raise Refused(f"the {what} is empty")
    if "\0" in text:  # the index's full-text query cannot hold one
        raise Refused(f"the {what} may not contain NUL characters")
    if len(text) > MAX_QUERY:
        raise Refused(f"the {what} is longer than {MAX_QUERY} characters")
    return text


@dataclass(frozen=True)
class SearchAnswer:
    """What a search found, and how far the index had got (``note``: "" when complete)."""

    hits: tuple[Hit, ...]
    symbols: tuple[SymbolHit, ...]
    progress: IndexProgress
    note: str


def progress_note(progress: IndexProgress, *, queued: bool = False) -> str:
    """The index's state in words for the results ("" when it is complete)."""
    if progress.state == "ready":
        return ""
    if progress.state == "building":
        return (
            f"index building: {progress.files_indexed:,} of {progress.files_total:,} files; "
            "results may be incomplete"
        )
    if progress.state == "failed":
        return f"index failed ({progress.error}); a rebuild was queued"
    return (
        "no index yet: a build was queued; search again in a moment" if queued else ("no index yet")
    )


def _answer(workspace: Path, hits: Any, symbols: Any) -> SearchAnswer:
    """Hits as the view shows them now: none in a file secret by name, excerpts masked."""
    index = code_index(workspace)
    progress = index.progress()
    queued = False
    if progress.state in ("missing", "failed") and not _recently_queued(workspace):
        search_index_queue(workspace)
        queued = True
    shown_hits = tuple(
        Hit(h.path, h.start_line, h.end_line, redact_text(h.excerpt, path=h.path), h.score,
            h.why)
        for h in hits if not is_secret_file(h.path)
    )  # fmt: skip
    shown_symbols = tuple(
        SymbolHit(s.path, s.line, s.end_line, s.kind, s.symbol, s.language,
                  redact_text(s.excerpt, path=s.path))
        for s in symbols if not is_secret_file(s.path)
    )  # fmt: skip
    return SearchAnswer(shown_hits, shown_symbols, progress, progress_note(progress, queued=queued))


def _recently_queued(workspace: Path) -> bool:
    try:
        return time.time() - _queued_marker(workspace).stat().st_mtime < REQUEUE_AFTER
    except FileNotFoundError:
        return False


def workspace_search(
    workspace: Path, query: str, *, globs: Iterable[Any] = (), limit: int = 10,
    mode: str = "hybrid",
) -> SearchAnswer:  # fmt: skip
    """Ranked file ranges for ``query`` (``GLOB_REFUSED`` for a glob a path would fail)."""
    checked = _checked(globs)
    result = code_index(Path(workspace)).search(
        query, globs=checked, limit=limit, mode=cast(Mode, mode if mode in MODES else "hybrid")
    )
    return _answer(Path(workspace), result.hits, ())


def workspace_symbols(
    workspace: Path, symbol: str, *, globs: Iterable[Any] = (), limit: int = 50,
    references: bool = False,
) -> SearchAnswer:  # fmt: skip
    """Definitions of ``symbol`` (``references``: its definitions and uses)."""
    checked = _checked(globs)
    index = code_index(Path(workspace))
    if references:
        found = index.find_references(symbol, globs=checked, limit=limit)
    else:
        found = index.search_code(symbol, globs=checked, limit=limit)
    return _answer(Path(workspace), (), found)


def _checked(globs: Iterable[Any]) -> tuple[str, ...]:
    try:
        return search_globs(globs)
    except Refused as exc:
        raise AcodeError(
            GLOB_REFUSED, f"Path glob refused: {exc.reason}", {"paths": "glob"}
        ) from exc
