"""What command rules need to know about a workspace: which paths go through a link.

A rule's ``path`` values and ``paths`` arguments are refused when they go through a
symbolic link (it could lead outside when commands run without the sandbox). That is the
one fact about the workspace a command decision depends on, so it is an input: the
executor passes the live workspace (``LiveWorkspace``), an example or a replay passes the
links it states or recorded (``KnownWorkspace``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class WorkspaceFacts(Protocol):
    """The workspace as a command decision sees it."""

    def link_on_path(self, parts: Sequence[str]) -> str | None:
        """The first leading part of ``parts`` (joined with ``/``) that is a symbolic link."""
        ...


@dataclass(frozen=True)
class LiveWorkspace:
    """A workspace directory, looked at without following anything (``lstat``)."""

    root: Path

    def link_on_path(self, parts: Sequence[str]) -> str | None:
        current = Path(self.root)
        for index, part in enumerate(parts):
            current = current / part
            try:
                info = os.lstat(current)
            except OSError:
                return None  # not there (yet): nothing on the way can lead elsewhere
            if stat.S_ISLNK(info.st_mode):
                return "/".join(parts[: index + 1])
        return None


@dataclass(frozen=True)
class KnownWorkspace:
    """A workspace described by its links (workspace-relative paths); nothing else is read."""

    links: frozenset[str] = frozenset()

    @classmethod
    def of(cls, links: Iterable[str] = ()) -> KnownWorkspace:
        return cls(frozenset(str(link).strip("/") for link in links))

    def link_on_path(self, parts: Sequence[str]) -> str | None:
        for index in range(len(parts)):
            prefix = "/".join(parts[: index + 1])
            if prefix in self.links:
                return prefix
        return None


def workspace_facts(workspace: Path | WorkspaceFacts) -> WorkspaceFacts:
    """``workspace`` as facts: a directory is looked at live."""
    return LiveWorkspace(workspace) if isinstance(workspace, Path) else workspace
