"""Reading a command's layer: only the kernel's overlay attributes, in the namespace of the
mount and where a command cannot forge them, say what is deleted; a redirect or a
directory the server cannot open is refused with its rule (and what depends on it); any
depth reads and removes. These layers are made by hand, as a kernel (or a command on an
older kernel) would leave them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roles.writes import CHANGE_PERMISSIONS, WritePolicy
from sessions_app.containment import layerscan
from sessions_app.containment.commandwrites import WriteTarget, command_writes
from sessions_app.containment.content import ContentStore
from sessions_app.containment.layer import Layer, layer_create, remove_tree
from sessions_app.containment.layerscan import LayerLimits, layer_changes
from sessions_app.containment.secretfiles import SecretIndex
from sessions_app.containment.writes import WorkspaceWriter
from tests.sessions_app.containment.layerkit import LIMITS, RecordingJournal

ALL = WritePolicy(frozenset(CHANGE_PERMISSIONS.values()))


@pytest.fixture
def made(tmp_path: Path) -> tuple[Path, Layer]:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "keep.md").write_text("keep\n")
    (ws / "docs" / "other.md").write_text("other\n")
    layer = layer_create(tmp_path / "layers")
    (layer.upper / "docs").mkdir()
    (layer.upper / "docs" / "new.md").write_text("new\n")
    return ws, layer


def apply(ws: Path, layer: Layer, limits: LayerLimits = LIMITS) -> tuple[list[str], set[str]]:
    writer = WorkspaceWriter(
        ws, ContentStore(None), SecretIndex(ws, ws.parent / "index", live=True)
    )
    writes = command_writes(layer, WriteTarget(writer, ALL, RecordingJournal(), limits),
                            sandboxed=True)  # fmt: skip
    return sorted(w.path for w in writes.allowed), {d["rule"] for d in writes.denied}


def test_an_opaque_directory_of_the_kernel_deletes_what_was_below(
    made: tuple[Path, Layer],
) -> None:
    ws, layer = made
    os.setxattr(layer.upper / "docs", "user.overlay.opaque", b"y")
    assert apply(ws, layer) == (["docs/keep.md", "docs/new.md", "docs/other.md"], set())
    assert sorted(os.listdir(ws / "docs")) == ["new.md"]


@pytest.mark.parametrize("attribute", ["trusted.overlay.opaque", "user.overlay.overlay.opaque"])
def test_opaque_marks_outside_the_mounts_namespace_delete_nothing(
    made: tuple[Path, Layer], attribute: str
) -> None:
    """The kernel of a user-namespace overlay uses user.overlay.*: a trusted.* mark is not
    its word, and an escaped one is what a command set itself (Linux 6.7+)."""
    ws, layer = made
    os.setxattr(layer.upper / "docs", attribute, b"y")
    assert apply(ws, layer) == (["docs/new.md"], set())
    assert sorted(os.listdir(ws / "docs")) == ["keep.md", "new.md", "other.md"]


def test_an_opaque_mark_a_command_could_have_set_refuses_the_directory(
    made: tuple[Path, Layer],
) -> None:
    """Before Linux 6.7 a command can set user.overlay.opaque itself: nothing under such a
    directory is applied, and nothing is deleted."""
    ws, layer = made
    os.setxattr(layer.upper / "docs", "user.overlay.opaque", b"y")
    unguarded = LayerLimits(LIMITS.max_bytes, LIMITS.max_entries, guarded=False)
    assert apply(ws, layer, unguarded) == ([], {"overlay_attribute"})
    assert sorted(os.listdir(ws / "docs")) == ["keep.md", "other.md"]


def test_a_redirect_refuses_the_directory(made: tuple[Path, Layer]) -> None:
    ws, layer = made
    os.setxattr(layer.upper / "docs", "user.overlay.redirect", b"/elsewhere")
    assert apply(ws, layer) == ([], {"overlay_attribute"})
    assert sorted(os.listdir(ws / "docs")) == ["keep.md", "other.md"]


def test_a_directory_the_server_cannot_open_is_a_denial(
    made: tuple[Path, Layer], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, layer = made
    (layer.upper / "locked").mkdir()
    (layer.upper / "locked" / "a.md").write_text("a\n")
    real = layerscan.open_dir
    monkeypatch.setattr(
        layerscan, "open_dir", lambda fd, name: -1 if name == "locked" else real(fd, name)
    )
    allowed, rules = apply(ws, layer)
    assert allowed == ["docs/new.md"] and rules == {"unreadable"}


def test_any_depth_reads_and_removes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    layer = layer_create(tmp_path / "layers")
    fd = os.open(layer.upper, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(5000):  # deeper than PATH_MAX allows to name from the top
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    with open(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as leaf:
        leaf.write("x")
    os.close(fd)
    scan = layer_changes(layer, ws, limits=LIMITS)
    assert scan.changes == [] and {r["rule"] for r in scan.refused} == {"path_length"}
    remove_tree(layer.path)
    assert not layer.path.exists()


def test_a_layer_over_its_entries_budget_is_refused_before_anything_applies(
    made: tuple[Path, Layer],
) -> None:
    ws, layer = made
    for index in range(20):
        (layer.upper / "docs" / f"f{index}.md").write_text("x\n")
    small = LayerLimits(LIMITS.max_bytes, 10)
    assert apply(ws, layer, small) == ([], {"layer_budget"})
    assert sorted(os.listdir(ws / "docs")) == ["keep.md", "other.md"]
