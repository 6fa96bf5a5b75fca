"""The cases of issue 36, each played with the real sandbox: names git cannot store, a
command's writes at any size and depth, a layer over its budget, a replacement refused
whole, overlay attributes a command sets, a mode change, and what the repository ignores.
After each, the commit's tree equals the base plus the approved content byte for byte
(``test_approval.assert_exactly_approved``) and no layer is left behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sessions_app.models import AgentSession, PendingChange, WorkspaceApply
from sessions_app.services.transitions import session_transition
from tests.sessions_app.agent.containment.kit import Area, Caller, needs_sandbox
from tests.sessions_app.agent.containment.test_approval import (
    BASE,
    approve,
    assert_exactly_approved,
    committed_tree,
    expected_tree,
    managed,
    pending_of,
)

# Containment holds or not whatever the database (it keeps the calls' audit rows and pending
# changes): CI runs this on PostgreSQL only (tests/conftest.py, db_agnostic).
pytestmark = [pytest.mark.django_db, needs_sandbox, pytest.mark.db_agnostic]
__all__ = ["managed"]  # the fixture, shared with the approval suite


def layers_left(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("layer-*")) + sorted(
        p.name for p in root.glob("applying-*")
    )


@pytest.fixture(autouse=True)
def _no_layer_outlives_a_call(settings: Any, tmp_path: Path) -> Any:
    """This test's layers in a root of its own (other tests make theirs meanwhile)."""
    settings.ACODE_LAYERS_ROOT = tmp_path / "layers"
    yield
    assert layers_left(tmp_path / "layers") == [], "a command's layer was left behind"


def discarded(call: Caller) -> dict[str, dict[str, str]]:
    rows = [r for r in call.rows if r.details.get("phase") == "command_writes"]
    return {d["path"]: d for r in rows for d in r.details["discarded"]}


def test_names_git_cannot_store_are_refused_not_dropped(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, _area = managed
    outcome = call("execute_command", argv=["sh", "-c", (
        "mkdir -p docs/sub; for n in 'docs/.git ' 'docs/.git.' docs/GIT~1 'docs/sub/.git '; "
        "do echo x > \"$n\"; done; echo ok > docs/ok.md"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    refused = discarded(call)
    for name in ("docs/.git ", "docs/.git.", "docs/GIT~1", "docs/sub/.git "):
        assert (refused[name]["rule"], refused[name]["code"]) == ("git_path", "ACODE-CHG-001")
    tool = call("create_file", path="docs/GIT~1", content="x")
    assert (tool.status, tool.code) == ("denied", "ACODE-CHG-001")
    assert_exactly_approved(call, user, {"docs/ok.md": b"ok\n"})


def test_thousands_of_files_are_applied_as_one_unit(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, area = managed
    outcome = call("execute_command", argv=["sh", "-c", (
        "mkdir -p docs/many; i=0; while [ $i -lt 2000 ]; do echo line $i > docs/many/f$i.md; "
        "i=$((i+1)); done"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    assert "recorded as pending changes: " in outcome.output and "and 1980 more" in outcome.output
    assert PendingChange.objects.filter(session=call.session).count() == 2000
    assert [r.event_type for r in call.rows].count("ChangeRecorded") == 1
    assert not WorkspaceApply.objects.exists()  # the journal closed
    assert not [p for p in os.listdir(area.ws) if p.startswith(".acode-staging-")]
    assert (area.ws / "docs" / "many" / "f1999.md").read_text() == "line 1999\n"
    wanted = {f"docs/many/f{i}.md": f"line {i}\n".encode() for i in range(2000)}
    assert_exactly_approved(call, user, wanted)


DEEP = (
    "import os\n"
    "os.chdir('docs')\n"
    "for _ in range({depth}):\n"
    "    os.mkdir('d'); os.chdir('d')\n"
    "open('leaf.md', 'w').write('deep\\n')\n"
)


def test_a_tree_450_deep_is_applied(managed: tuple[Caller, Area], user: Any) -> None:
    call, _ = managed
    outcome = call("execute_command", argv=["python", "-c", DEEP.format(depth=450)])
    assert outcome.status == "ok", outcome.for_model()
    leaf = "docs/" + "d/" * 450 + "leaf.md"
    assert_exactly_approved(call, user, {leaf: b"deep\n"})


def test_a_tree_500_deep_loses_no_other_write(managed: tuple[Caller, Area], user: Any) -> None:
    """Past the longest path a pending change holds (1,000 characters), the deep file is
    refused with its rule; the command's other writes are applied."""
    call, _ = managed
    script = "start = __import__('os').getcwd()\n" + DEEP.format(depth=500)
    script += "os.chdir(start); open('docs/ok.md', 'w').write('ok\\n')\n"
    outcome = call("execute_command", argv=["python", "-c", script])
    assert outcome.status == "ok", outcome.for_model()
    assert {d["rule"] for d in discarded(call).values()} == {"path_length"}
    assert_exactly_approved(call, user, {"docs/ok.md": b"ok\n"})


def test_a_tree_5000_deep_is_refused_cleanly(managed: tuple[Caller, Area], user: Any) -> None:
    call, area = managed
    script = DEEP.format(depth=5000) + "os.chdir('/tmp'); print('made')\n"
    outcome = call("execute_command", argv=["python", "-c", script])
    assert outcome.status == "ok" and "made" in outcome.output, outcome.for_model()
    rules = {d["rule"] for d in discarded(call).values()}
    assert rules == {"path_length"}
    assert not PendingChange.objects.filter(session=call.session).exists()
    assert sorted(os.listdir(area.ws / "docs")) == ["guide.md"]


def test_sparse_files_over_the_budget_apply_nothing(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, area = managed
    outcome = call("execute_command", argv=["sh", "-c", (
        "echo small > docs/small.md; truncate -s 1G docs/a.bin; truncate -s 1G docs/b.bin"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    assert "none of the command's writes were applied" in outcome.output
    (row,) = [r for r in call.rows if r.details.get("phase") == "command_writes"]
    assert row.result == "ACODE-TOL-005" and row.details["rule"] == "layer_budget"
    assert not PendingChange.objects.filter(session=call.session).exists()
    assert sorted(os.listdir(area.ws / "docs")) == ["guide.md"]


def test_a_replacement_is_refused_whole(managed: tuple[Caller, Area], user: Any) -> None:
    call, area = managed
    (area.ws / "notes").mkdir()
    (area.ws / "notes" / "heading.md").write_text("# Notes\n")
    role_paths(call, ["docs/**", "notes/**"])
    outcome = call("execute_command", argv=["sh", "-c", (
        "rm -r notes && echo flat > notes; echo ok > docs/ok.md"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    refused = discarded(call)
    assert refused["notes"]["rule"] == "write_paths"
    assert refused["notes/heading.md"] == {
        "path": "notes/heading.md", "change": "deleted", "rule": "depends",
        "problem": "refused with notes",
    }  # fmt: skip
    assert (area.ws / "notes" / "heading.md").read_text() == "# Notes\n"
    assert_exactly_approved(call, user, {"docs/ok.md": b"ok\n"})


def role_paths(call: Caller, paths: list[str]) -> None:
    from roles.services import role_write

    role_write(data={"write_paths": paths}, create=False, slug="coder", actor="test")


def test_overlay_attributes_a_command_sets_delete_nothing(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, area = managed
    (area.ws / "docs" / "keep.md").write_text("keep\n")
    outcome = call("execute_command", argv=["python", "-c", (
        "import os\n"
        "for name in ('user.overlay.opaque', 'user.overlay.redirect'):\n"
        "    try: os.setxattr('docs', name, b'y')\n"
        "    except OSError as e: print(name, e)\n"
        "open('docs/new.md', 'w').write('new\\n')\n"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    assert (area.ws / "docs" / "keep.md").read_text() == "keep\n"
    assert_exactly_approved(call, user, {"docs/new.md": b"new\n"})


def test_a_mode_change_is_committed_with_its_mode(managed: tuple[Caller, Area], user: Any) -> None:
    call, _area = managed
    outcome = call("execute_command", argv=["sh", "-c", "chmod +x docs/guide.md"])
    assert "recorded as pending changes: docs/guide.md" in outcome.output, outcome.for_model()
    (change,) = PendingChange.objects.filter(session=call.session)
    assert (change.kind, change.mode) == ("modified", 0o100755)
    assert change.diff.startswith("old mode 100644\nnew mode 100755\n")
    pending = pending_of(call.session)
    commit = approve(call, user)
    tree = committed_tree(call.session, commit)
    assert tree == expected_tree(pending, call.session)
    assert tree["docs/guide.md"] == ("100755", BASE["docs/guide.md"])
    # Back to 644 in a new review cycle: a change again, committed as such.
    session = AgentSession.objects.get(pk=call.session.pk)
    session_transition(session=session, to_role="coder", reason="again", actor="test")
    back = call("execute_command", argv=["sh", "-c", "chmod -x docs/guide.md"])
    assert "recorded as pending changes: docs/guide.md" in back.output


def test_ignored_output_persists_for_the_session_and_is_never_proposed(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, area = managed
    where = area.ws
    gitignore = b".venv/\nbuild/\n"
    role_paths(call, ["docs/**", ".gitignore"])
    first = call("execute_command", argv=["sh", "-c", (
        "printf '.venv/\\nbuild/\\n' > .gitignore; echo 'x = 1' > docs/tool.py; "
        "mkdir -p build && echo scratch > build/scratch.txt; ruff check --no-fix . ; "
        "python -m venv .venv && echo made"
    )])  # fmt: skip
    assert first.status == "ok" and "made" in first.output, first.for_model()
    assert "kept for this session" in first.output
    assert set(pending_of(call.session)) == {".gitignore", "docs/tool.py"}
    assert not (where / "build").exists() and not (where / ".venv").exists()
    assert not (where / ".ruff_cache").exists()
    later = call("execute_command", argv=["sh", "-c", (
        ".venv/bin/python -c 'import sys; print(sys.prefix)'; cat build/scratch.txt; "
        "ls -d .ruff_cache"
    )])  # fmt: skip
    assert later.status == "ok", later.for_model()
    assert f"{where}/.venv\n" in later.output and "scratch\n" in later.output
    assert ".ruff_cache\n" in later.output
    assert set(pending_of(call.session)) == {".gitignore", "docs/tool.py"}
    assert_exactly_approved(call, user, {".gitignore": gitignore, "docs/tool.py": b"x = 1\n"})
