"""Containment of file access: links, hard links, racing swaps, .git, text the audit
must take, and the write rules by every tool."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from typing import Any

import pytest

from sessions_app.agent.context import build_context
from sessions_app.models import PendingChange
from tests.sessions_app.agent.containment.kit import (
    Area,
    Caller,
    as_tester,
    coder,
    fingerprint,
    needs_sandbox,
    src_tree,
)
from tests.sessions_app.jobkit import session_in

# Containment holds or not whatever the database (it keeps the calls' audit rows and pending
# changes): CI runs this on PostgreSQL only (tests/conftest.py, db_agnostic).
pytestmark = [pytest.mark.django_db, pytest.mark.db_agnostic]


# -- links ----------------------------------------------------------------------------
@needs_sandbox
def test_hard_links_are_refused_by_every_reader(user: Any, area: Area) -> None:
    os.link(area.sentinel / "keep.txt", area.ws / "docs" / "hard.md")
    area.original = fingerprint(area.sentinel)  # the link count is now 2 on purpose
    call = coder(user, area)
    for tool, args in (
        ("read_file", {"path": "docs/hard.md"}),
        ("write_file", {"path": "docs/hard.md", "content": "pwned"}),
        ("delete_file", {"path": "docs/hard.md"}),
    ):
        outcome = call(tool, **args)
        assert outcome.status == "denied" and "hard link" in outcome.reason
        assert call.outcome_row().details["rule"] == "path"
    found = call("grep_search", pattern="do not touch")
    assert found.output == "(no matches)"
    bundle = build_context(
        workspace=area.ws, role_name="Coder", strategy="focused", request="Read docs/hard.md"
    )
    assert "do not touch" not in bundle.text
    linked = call("execute_command", argv=["ln", "src/app.py", "docs/app-link.md"])
    assert linked.status == "ok"
    # A link made in the command's layer is applied as a file of its own, never as a link.
    assert call.denied_writes() == set()
    assert (area.ws / "docs" / "app-link.md").read_text() == "x = 1\n"
    assert os.stat(area.ws / "docs" / "app-link.md").st_nlink == 1
    assert os.stat(area.ws / "src" / "app.py").st_nlink == 1


@needs_sandbox
def test_symlinks_swapped_during_calls_never_lead_outside(user: Any, area: Area) -> None:
    inner = area.ws / "docs" / "d"
    inner.mkdir()
    (inner / "f.md").write_text("inside\n")
    parked = area.ws / "docs" / ".parked"
    call = coder(user, area)
    stop = threading.Event()
    swaps = 0

    def put_back() -> None:
        # A write in a gap of the swap may have made docs/d again (inside): ours wins.
        if os.path.islink(inner):
            os.unlink(inner)
        while True:
            shutil.rmtree(inner, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.rename(parked, inner)
                return

    def swap() -> None:
        nonlocal swaps
        while not stop.is_set():
            os.rename(inner, parked)
            try:
                os.symlink(area.sentinel / "sub", inner)
                time.sleep(0)
                swaps += 1
            except FileExistsError:
                pass
            finally:
                put_back()

    racer = threading.Thread(target=swap)
    racer.start()
    try:
        outputs = []
        for i in range(200):
            outputs.append(call("read_file", path="docs/d/f.md").for_model())
            outputs.append(call("write_file", path="docs/d/f.md", content=f"w{i}\n").for_model())
            outputs.append(call("grep_search", pattern="secret-content", path="docs").for_model())
    finally:
        stop.set()
        racer.join()
    assert swaps > 100
    assert not any("outside-secret-content" in text for text in outputs)
    assert (area.sentinel / "sub" / "f.md").read_text() == "outside-secret-content\n"
    area.assert_sentinel_unchanged()


@needs_sandbox
def test_git_directory_is_unreachable_through_links(user: Any, area: Area) -> None:
    os.symlink(".git", area.ws / "gitlink")
    os.link(area.ws / ".git" / "config", area.ws / "docs" / "config.md")
    call = coder(user, area)
    for tool, args in (
        ("read_file", {"path": "gitlink/config"}),
        ("read_file", {"path": "docs/config.md"}),
        ("read_file", {"path": ".git/config"}),
        ("read_file", {"path": ".GIT/config"}),
        ("list_directory", {"path": "gitlink"}),
        ("write_file", {"path": "docs/config.md", "content": "[core]\nfsmonitor = x\n"}),
        ("create_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
    ):
        assert call(tool, **args).status == "denied", (tool, args)
    assert ".git" not in call("list_directory", path=".").output
    assert "repositoryformatversion" not in call("grep_search", pattern="repositoryformat").output


@needs_sandbox
def test_coder_git_config_is_undone_and_planted_hooks_never_run(user: Any, area: Area) -> None:
    marker = area.sentinel / "fsmonitor-ran"
    call = coder(user, area)
    set_it = call("execute_command", argv=["git", "config", "core.fsmonitor", f"touch {marker}"])
    # The command sees git through a read-only view, and the workspace's .git masked.
    assert set_it.status == "ok" and "[exit 0]" not in set_it.output
    planted = call("execute_command", argv=["sh", "-c", "echo x >> .git/config"])
    assert planted.status == "ok"
    assert "fsmonitor" not in (area.ws / ".git" / "config").read_text()
    assert "x" not in (area.ws / ".git" / "config").read_text().split()
    # Planted anyway (say by a run without the sandbox): a read-only role's searches,
    # listings and context never run it.
    for key, value in (
        ("core.fsmonitor", f"touch {marker}"),
        ("core.hooksPath", str(area.sentinel)),
        ("diff.external", f"touch {marker}"),
        ("filter.evil.clean", f"touch {marker}"),
        ("filter.evil.smudge", f"touch {marker}"),
        ("core.pager", f"touch {marker}"),
    ):
        subprocess.run(["git", "-C", str(area.ws), "config", key, value], check=True)
    (area.ws / ".gitattributes").write_text("* filter=evil diff=evil\n")
    area.original = fingerprint(area.sentinel)
    explorer = Caller(session_in("explorer", user, workspace=area.ws), user, area)
    assert explorer("grep_search", pattern="helper").status == "ok"
    assert explorer("list_directory", path="src").status == "ok"
    assert explorer("read_file", path="src/app.py").status == "ok"
    for strategy in ("broad", "focused"):
        build_context(
            workspace=area.ws, role_name="Explorer", strategy=strategy, request="helper in app.py"
        )
    assert not marker.exists()


# -- text the audit must take -----------------------------------------------------------
@needs_sandbox
def test_lone_surrogates_and_over_long_paths_are_audited_refusals(user: Any, area: Area) -> None:
    call = coder(user, area)
    cases = [
        ("read_file", {"path": "docs/\ud800.md"}, "path"),
        ("create_file", {"path": "docs/\udcff.md", "content": "x"}, "path"),
        ("read_file", {"path": "docs/" + "a" * 5000}, "path"),
        ("read_file", {"path": "docs/" + "b" * 300 + ".md"}, "path"),
        ("execute_command", {"argv": ["echo", "\ud800"]}, "argv"),
        ("execute_command", {"argv": ["echo", "x" * 200_000]}, "argv"),
        ("grep_search", {"pattern": "x", "path": "\udc80"}, "path"),
    ]
    for tool, args, rule in cases:
        outcome = call(tool, **args)
        assert outcome.status == "denied", (tool, outcome)
        assert call.rows[-1].details["rule"] == rule
    surrogate_content = call("create_file", path="docs/x.md", content="bad \ud800 text")
    assert surrogate_content.status == "denied" and "lone surrogate" in surrogate_content.reason
    assert not (area.ws / "docs" / "x.md").exists()


# -- the write rules, by every tool -------------------------------------------------------
@needs_sandbox
def test_a_docs_only_coder_cannot_change_src_by_any_tool(user: Any, area: Area) -> None:
    call = coder(user, area)
    before = src_tree(area.ws)
    for tool, args in (
        ("write_file", {"path": "src/app.py", "content": "pwned"}),
        ("create_file", {"path": "src/new.py", "content": "pwned"}),
        ("delete_file", {"path": "src/app.py"}),
        ("write_file", {"path": "docs/../src/app.py", "content": "pwned"}),
        ("create_file", {"path": "./src/x.py", "content": "pwned"}),
    ):
        outcome = call(tool, **args)
        assert outcome.status == "denied"
        assert call.rows[-1].details["rule"] in ("write_paths", "path")
    for argv in (
        ["sh", "-c", "echo pwned > src/app.py; rm -f src/util/helpers.py; touch src/new.py"],
        ["sh", "-c", "rm -rf src; ln -s /etc src"],
        ["sh", "-c", "rm -rf src && mkdir src && echo x > src/app.py"],
        ["mv", "src", "docs/src"],
        ["python", "-c", "import shutil; shutil.rmtree('src')"],
        ["sed", "-i", "s/1/2/", "src/app.py"],
        ["chmod", "000", "src/app.py"],
        ["git", "rm", "-r", "-q", "--cached", "src"],
    ):
        outcome = call("execute_command", argv=argv)
        assert outcome.status == "ok", (argv, outcome.for_model())
        assert src_tree(area.ws) == before, argv
    assert call("execute_command", argv=["sh", "-c", "echo ok > docs/notes.md"]).status == "ok"
    changed = set(PendingChange.objects.filter(session=call.session).values_list("path", flat=True))
    assert changed and all(p.startswith("docs/") for p in changed)
    assert "docs/notes.md" in changed


@needs_sandbox
def test_allowed_command_writes_become_pending_changes(user: Any, area: Area) -> None:
    call = coder(user, area)
    outcome = call("execute_command", argv=["sh", "-c", "echo new > docs/new.md; rm docs/guide.md"])
    assert "recorded as pending changes: docs/guide.md, docs/new.md" in outcome.output
    changes = {c.path: c.kind for c in PendingChange.objects.filter(session=call.session)}
    assert changes == {"docs/new.md": "created", "docs/guide.md": "deleted"}
    (recorded,) = [r for r in call.rows if r.event_type == "ChangeRecorded"]  # one for all
    assert recorded.target == "docs/guide.md, docs/new.md" and recorded.details["count"] == 2
    assert call.outcome_row().details["recorded"] == ["docs/guide.md", "docs/new.md"]


@needs_sandbox
def test_a_role_without_write_permission_gets_a_read_only_workspace(user: Any, area: Area) -> None:
    call = as_tester(user, area)
    outcome = call("execute_command", argv=["pytest", "--basetemp=docs"])
    assert outcome.status == "ok"
    assert call.rows[0].details["normalised"]["writable"] is False
    assert fingerprint(area.ws / "docs") == {"guide.md": ("file", b"# Guide\n", 0o100644)}
