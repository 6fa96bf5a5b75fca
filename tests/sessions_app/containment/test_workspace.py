"""What a command wrote: it lands in a copy-on-write layer, the server applies what the role
may write and discards the rest; the workspace never changes while the command runs."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from roles.writes import CHANGE_PERMISSIONS, WritePolicy, WriteRule
from sessions_app.containment.commandwrites import WriteTarget, command_writes
from sessions_app.containment.content import ContentStore
from sessions_app.containment.layer import layer_create
from sessions_app.containment.sandbox import run_sandboxed, sandbox_available
from sessions_app.containment.secretfiles import SecretIndex
from sessions_app.containment.view import process_view
from sessions_app.containment.workspace import RuleRefused, check_argv, workspace_files
from sessions_app.containment.writes import CommandWrites, WorkspaceWriter
from tests.sessions_app.containment.layerkit import LIMITS, RecordingJournal

STATUS = sandbox_available()
WRITER = frozenset(CHANGE_PERMISSIONS.values())  # may create, change and delete files


def policy(*, may_write: bool = True, write_paths: tuple[str, ...] = ()) -> WritePolicy:
    return WritePolicy(WRITER if may_write else frozenset(), tuple(write_paths))


def write_rule(
    path: str, *, may_write: bool, write_paths: list[str], kind: str = "file", mode: int = 0o644
) -> WriteRule:
    """The role's one write-path rule for a file changed at ``path``."""
    return policy(may_write=may_write, write_paths=tuple(write_paths)).check(
        path, change="modified", kind=kind, mode=mode
    )


needs_layer = pytest.mark.skipif(
    not (STATUS.available and STATUS.overlay),
    reason=f"no sandbox with a copy-on-write layer here: {STATUS.reason} {STATUS.overlay_reason}",
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, text in {
        "src/app.py": "x = 1\n",
        "src/util/helpers.py": "def h(): pass\n",
        "docs/guide.md": "# Guide\n",
        "docs/old/a.md": "a\n",
        "docs/old/b.md": "b\n",
        "README.md": "readme\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


def tree(root: Path) -> dict[str, tuple[str, bytes, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
            data = path.read_bytes() if kind == "file" else b""
            out[str(path.relative_to(root))] = (kind, data, stat.S_IMODE(info.st_mode))
    return out


def command(
    ws: Path,
    script: str,
    *,
    globs: tuple[str, ...] = (),
    may_write: bool = True,
    sandboxed: bool = True,
) -> CommandWrites:
    """``sh -c script`` as a write-capable command, then its layer applied for the role."""
    layer = layer_create(ws.parent / "layers")
    try:
        before = tree(ws)
        outcome = run_sandboxed(
            ["/bin/sh", "-c", script], workspace=ws, writable=True, timeout=30,
            view=process_view(None, workspace=ws, layer=layer),
        )  # fmt: skip
        assert outcome.exit_code == 0, outcome.output
        if sandboxed:
            assert tree(ws) == before, "the command changed the workspace itself"
        writer = WorkspaceWriter(
            ws, ContentStore(None), SecretIndex(ws, ws.parent / "index", live=True)
        )
        rule = policy(may_write=may_write, write_paths=globs)
        target = WriteTarget(writer, rule, RecordingJournal(), LIMITS)
        return command_writes(layer, target, sandboxed=sandboxed)
    finally:
        layer.remove()
    assert not layer.path.exists()


def denied(writes: CommandWrites) -> set[tuple[str, str, str]]:
    return {(d["path"], d["change"], d["rule"]) for d in writes.denied}


@needs_layer
def test_allowed_changes_are_applied_with_their_texts_and_content_ids(ws: Path) -> None:
    writes = command(
        ws,
        "printf '# Guide\\nmore\\n' > docs/guide.md; echo new > docs/new.md; "
        "mkdir docs/api; echo api > docs/api/index.md; rm README.md; rm -r docs/old",
        globs=("docs/**", "README.md"),
    )
    assert writes.denied == []
    got = {c.path: (c.before, c.after) for c in writes.allowed}
    assert got == {
        "docs/guide.md": ("# Guide\n", "# Guide\nmore\n"),
        "docs/new.md": (None, "new\n"),
        "docs/api/index.md": (None, "api\n"),
        "README.md": ("readme\n", None),
        "docs/old/a.md": ("a\n", None),
        "docs/old/b.md": ("b\n", None),
    }
    assert (ws / "docs" / "api" / "index.md").read_text() == "api\n"
    assert not (ws / "README.md").exists() and not (ws / "docs" / "old").exists()
    new = next(c for c in writes.allowed if c.path == "docs/new.md")
    blob = subprocess.run(
        ["git", "hash-object", str(ws / "docs" / "new.md")], capture_output=True, text=True
    ).stdout.strip()
    assert (new.content, new.mode) == (blob, 0o100644)


@needs_layer
def test_changes_outside_the_write_paths_are_discarded(ws: Path) -> None:
    before = tree(ws)
    writes = command(
        ws,
        "echo pwned > src/app.py; chmod 777 src/app.py; echo n > src/new.py; "
        "rm src/util/helpers.py; mkdir src/made; echo x > docs/ok.md",
        globs=("docs/**",),
    )
    assert denied(writes) == {
        ("src/app.py", "modified", "write_paths"),
        ("src/new.py", "created", "write_paths"),
        ("src/util/helpers.py", "deleted", "write_paths"),
    }
    assert [c.path for c in writes.allowed] == ["docs/ok.md"]
    after = tree(ws)
    del after["docs/ok.md"]
    assert after == before


@needs_layer
def test_a_role_without_write_permission_changes_nothing(ws: Path) -> None:
    before = tree(ws)
    writes = command(ws, "echo x > docs/guide.md; rm README.md", may_write=False)
    assert denied(writes) == {
        ("docs/guide.md", "modified", "write_permission"),
        ("README.md", "deleted", "write_permission"),
    }
    assert writes.allowed == [] and tree(ws) == before


@needs_layer
def test_a_directory_swapped_for_a_link_is_discarded(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("outside\n")
    writes = command(ws, f"rm -r docs && ln -s {outside} docs", globs=("docs/**", "docs"))
    assert ("docs", "modified", "file_kind") in denied(writes)  # a directory became a link
    assert (ws / "docs").is_dir() and not (ws / "docs").is_symlink()
    assert (outside / "keep.md").read_text() == "outside\n"
    assert sorted(os.listdir(outside)) == ["keep.md"]


@needs_layer
def test_a_file_replaced_by_a_directory_where_allowed(ws: Path) -> None:
    writes = command(ws, "rm docs/guide.md && mkdir docs/guide.md && echo x > docs/guide.md/in",
                     globs=("docs/**",))  # fmt: skip
    assert writes.denied == []
    assert {(c.path, c.after) for c in writes.allowed} == {
        ("docs/guide.md", None), ("docs/guide.md/in", "x\n"),
    }  # fmt: skip
    assert (ws / "docs" / "guide.md" / "in").read_text() == "x\n"


@needs_layer
def test_a_directory_replaced_by_a_file_where_allowed(ws: Path) -> None:
    writes = command(ws, "rm -r docs/old && echo flat > docs/old", globs=("docs/**",))
    assert {(c.path, c.after) for c in writes.allowed} == {
        ("docs/old/a.md", None), ("docs/old/b.md", None), ("docs/old", "flat\n"),
    }  # fmt: skip
    assert (ws / "docs" / "old").read_text() == "flat\n"


@needs_layer
def test_links_special_files_and_privileged_modes_are_never_applied(ws: Path) -> None:
    writes = command(
        ws,
        "ln -s /etc/passwd docs/link; mkfifo docs/fifo; ln docs/guide.md docs/hard; "
        "cp /bin/sh docs/sh; chmod 4755 docs/sh; echo s > docs/sgid; chmod 2755 docs/sgid; "
        "mkdir docs/sticky; chmod 1777 docs/sticky",
        globs=("docs/**",),
    )
    assert denied(writes) == {
        ("docs/link", "created", "file_kind"),
        ("docs/fifo", "created", "file_kind"),
        ("docs/sh", "created", "file_mode"),
        ("docs/sgid", "created", "file_mode"),
        ("docs/sticky", "modified", "file_mode"),
    }
    # A hard link made inside the layer is just another file: its content is applied.
    assert [c.path for c in writes.allowed] == ["docs/hard"]
    for name in ("link", "fifo", "sh", "sgid"):
        assert not os.path.lexists(ws / "docs" / name)
    assert os.stat(ws / "docs" / "hard").st_nlink == 1


@needs_layer
def test_git_metadata_is_never_applied(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    config = (ws / ".git" / "config").read_bytes()
    writes = command(
        ws,
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' >> .git/config; "
        "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit; mkdir -p sub/.git; "
        "echo y > sub/.git/config; echo z > docs/ok.md",
    )
    rules = {path: rule for path, _, rule in denied(writes)}
    assert rules == {".git/config": "git_dir", ".git/hooks/pre-commit": "git_dir",
                     "sub/.git/config": "git_dir"}  # fmt: skip
    assert (ws / ".git" / "config").read_bytes() == config
    assert not (ws / "sub").exists()


@needs_layer
def test_file_names_with_control_characters_are_refused(ws: Path) -> None:
    writes = command(
        ws, "echo a > \"$(printf 'docs/x\\ny')\"; echo b > \"$(printf 'docs/e\\033[31m')\""
    )
    assert denied(writes) == {
        ("docs/x\\x0ay", "created", "file_name"),
        ("docs/e\\x1b[31m", "created", "file_name"),
    }
    assert sorted(os.listdir(ws / "docs")) == ["guide.md", "old"]


@needs_layer
def test_touching_or_rewriting_the_same_content_is_no_change(ws: Path) -> None:
    writes = command(ws, "touch docs/guide.md; cat README.md > r && cat r > README.md; rm r; "
                         "chmod 755 run.sh")  # fmt: skip
    assert writes.allowed == [] and writes.denied == []


@needs_layer
def test_a_mode_change_is_a_change(ws: Path) -> None:
    writes = command(ws, "chmod -x run.sh; chmod +x docs/guide.md", globs=("**",))
    modes = {c.path: c.mode for c in writes.allowed}
    assert modes == {"run.sh": 0o100644, "docs/guide.md": 0o100755}
    assert os.access(ws / "docs" / "guide.md", os.X_OK) and not os.access(ws / "run.sh", os.X_OK)


@needs_layer
def test_a_large_allowed_file_is_recorded_by_its_size_and_content(ws: Path) -> None:
    writes = command(
        ws, "head -c 3000000 /dev/zero | tr '\\0' a > docs/big.txt", globs=("docs/**",)
    )
    (change,) = writes.allowed
    assert change.after == "[binary or large file: 1048577 bytes]\n"
    assert (ws / "docs" / "big.txt").stat().st_size == 3_000_000
    assert len(change.content) == 40


def test_without_the_sandbox_the_command_runs_in_a_copy(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACODE_SANDBOX", "off")
    writes = command(ws, "echo x > src/app.py; echo y > docs/y.md; rm README.md",
                     globs=("docs/**",), sandboxed=False)  # fmt: skip
    assert denied(writes) == {
        ("src/app.py", "modified", "write_paths"), ("README.md", "deleted", "write_paths"),
    }  # fmt: skip
    assert [c.path for c in writes.allowed] == ["docs/y.md"]
    assert (ws / "src" / "app.py").read_text() == "x = 1\n" and (ws / "README.md").exists()


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        (".git/config", "git_dir"), ("a/.GIT/x", "git_dir"), ("src/a.py", "write_paths"),
        ("docs/a\nb", "file_name"), ("docs/\x1b", "file_name"), ("docs/\udcff", "file_name"),
        ("docs/ok.md", "write_paths: docs/**"),
    ],
)  # fmt: skip
def test_one_write_rule_names_what_decided(path: str, rule: str) -> None:
    assert write_rule(path, may_write=True, write_paths=["docs/**"]).rule == rule
    assert write_rule("docs/x", may_write=False, write_paths=[]).rule == "write_permission"
    assert write_rule("docs/x", may_write=True, write_paths=[], kind="symlink").rule == "file_kind"
    assert write_rule("docs/x", may_write=True, write_paths=[], mode=0o4755).rule == "file_mode"


def test_workspace_files_honour_gitignore_and_never_follow_links(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("s\n")
    os.symlink(outside, ws / "linked")
    (ws / "build").mkdir()
    (ws / "build" / "out.py").write_text("o\n")
    plain = workspace_files(ws)
    assert "src/app.py" in plain and "linked/secret.py" not in plain
    assert "build/out.py" not in plain  # a skipped directory
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("docs/\n")
    marker = tmp_path / "fsmonitor-ran"
    subprocess.run(
        ["git", "-C", str(ws), "config", "core.fsmonitor", f"touch {marker}; false"], check=True
    )
    listed = workspace_files(ws)
    assert "src/app.py" in listed and "docs/guide.md" not in listed
    assert not any(p.startswith("linked/") and p != "linked" for p in listed)
    assert not marker.exists()


def test_workspace_files_fall_back_when_git_is_refused(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    subprocess.run(["git", "init", "-q", str(elsewhere)], check=True)
    (ws / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    assert "src/app.py" in workspace_files(ws)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ("pytest -q", "argument lists of strings"),
        ([], "argument lists of strings"),
        (["pytest", 1], "argument lists of strings"),
        ([" "], "program name is empty"),
        (["echo", "a\0b"], "NUL"),
        (["echo", "\ud800"], "lone surrogate"),
        (["true"] * 1001, "at most 1000 arguments"),
        (["echo", "x" * 200_000], "longer than"),
    ],
)
def test_argv_shape_is_checked(argv: object, says: str) -> None:
    with pytest.raises(RuleRefused) as refused:
        check_argv(argv)
    assert says in refused.value.reason and refused.value.rule == "argv"


def test_argv_with_shell_characters_inside_an_argument_is_just_an_argument() -> None:
    assert check_argv(["sh", "-c", "echo hi > out.txt"]) == ["sh", "-c", "echo hi > out.txt"]
    # A whole argument that looks like shell syntax is data too: no shell runs it.
    assert check_argv(["echo", "x", ">", "f"]) == ["echo", "x", ">", "f"]
