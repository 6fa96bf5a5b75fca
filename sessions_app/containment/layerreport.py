"""What reading a command's layer reports: each change (``LayerChange``), the whole scan
(``LayerScan``), the limits it was read within (``LayerLimits``) and the refusal of a
layer over them (``LayerOverBudget``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from roles.decision.arguments import MAX_PATH_BYTES

KERNEL_ESCAPES_OVERLAY_XATTRS = (6, 7)


@dataclass(frozen=True)
class LayerChange:
    """One thing a command changed, as a workspace-relative path.

    ``change`` is created, modified or deleted; ``kind`` is what is there now (file, dir,
    symlink, other) or, for a deletion, what was there. ``mode`` is the permission bits
    (special bits included) of what is there now. ``source`` is where its content can be
    read (relative to the layer's upper directory, or to the copy), for files. ``group``:
    the path of the replaced entry this change stands or falls with ("" on its own).
    """

    path: str
    change: str
    kind: str
    mode: int = 0
    size: int = 0
    source: str = ""
    group: str = ""


@dataclass(frozen=True)
class LayerLimits:
    """What one command's layer may hold, and how to read the kernel's overlay attributes:
    ``prefix`` their namespace for this mount, ``guarded`` whether a command cannot set
    attributes in it itself."""

    max_bytes: int
    max_entries: int
    prefix: str = "user.overlay."
    guarded: bool = True
    max_path: int = MAX_PATH_BYTES  # the longest path that can become a change


def kernel_guards_overlay_xattrs() -> bool:
    """Linux 6.7+ stores a command's own ``user.overlay.*`` attributes escaped."""
    release = os.uname().release.split("-")[0].split(".")
    try:
        return tuple(int(p) for p in release[:2]) >= KERNEL_ESCAPES_OVERLAY_XATTRS
    except ValueError:  # pragma: no cover - a release without numbers
        return False


class LayerOverBudget(Exception):
    """The layer holds more than its limits allow: nothing of it is applied."""

    def __init__(self, what: str, count: int, limit: int) -> None:
        super().__init__(f"the command's layer holds more than {limit} {what} ({count}+)")
        self.what, self.count, self.limit = what, count, limit


@dataclass
class LayerScan:
    """What a command left: ``changes`` to apply (by the role's rule), ``refused`` entries
    the reader itself refuses (path, change, rule, group), ``ignored`` top-most paths the
    repository ignores (kept in the session layer), ``scrub`` entries of those not kept
    (refused), ``empty_dirs`` new directories left empty, and the counts."""

    changes: list[LayerChange] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    scrub: list[str] = field(default_factory=list)
    empty_dirs: list[str] = field(default_factory=list)
    entries: int = 0
    bytes: int = 0
