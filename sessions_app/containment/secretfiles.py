"""Which workspace files hold secrets (``.env``, keys, credentials): hidden from commands.

A command of a role without the ``read_secrets`` permission sees each of these files empty
(the sandbox mounts an empty read-only file over it), so ``base64 .env`` shows nothing;
redaction of output stays as the second line. Finding them must not cost a walk of the
workspace per command: for a managed workspace only the server changes the files, so the
list is kept in server state (next to its git directory), built once and updated by every
server write. An attached workspace can change behind acode's back, so it is scanned each
time (a names-only walk).
"""

from __future__ import annotations

import json
import os
import secrets
import stat as st
from pathlib import Path

from sessions_app.containment.redaction import is_secret_file
from sessions_app.containment.safefs import DIR_FLAGS, walk_tree

SKIPPED_DIRS = frozenset({".git"})


class SecretIndex:
    """The secret files of one workspace; ``file`` None means "scan every time"."""

    def __init__(self, root: Path, file: Path | None) -> None:
        self.root = Path(root)
        self.file = file

    def paths(self) -> list[str]:
        """Workspace-relative paths of the regular files that hold secrets, sorted."""
        if self.file is None:
            return scan_secret_files(self.root)
        try:
            loaded = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None
        if not isinstance(loaded, list) or not all(isinstance(p, str) for p in loaded):
            found = scan_secret_files(self.root)
            self._save(found)
            return found
        return loaded

    def note(self, path: str, *, exists: bool) -> None:
        """A server write created, replaced or removed ``path``."""
        if self.file is None or not is_secret_file(path):
            return
        current = set(self.paths())
        changed = (path in current) != exists
        if changed:
            (current.add if exists else current.discard)(path)
            self._save(sorted(current))

    def rebuild(self) -> None:
        """Scan the workspace again (after a checkout)."""
        if self.file is not None:
            self._save(scan_secret_files(self.root))

    def _save(self, paths: list[str]) -> None:
        if self.file is None:
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(f".{self.file.name}.{secrets.token_hex(4)}")
        tmp.write_text(json.dumps(paths), encoding="utf-8")
        os.replace(tmp, self.file)


def scan_secret_files(root: Path) -> list[str]:
    """Every regular file under ``root`` whose name marks it as secret (links not followed).

    Hard-linked files and names that are not UTF-8 count too: whatever a command could
    read is hidden."""
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        found = walk_tree(top, "", descend=_descend, keep=_is_secret)
        return sorted(found)
    finally:
        os.close(top)


def _descend(name: str) -> bool:
    return name not in SKIPPED_DIRS


def _is_secret(entry: os.DirEntry[str]) -> bool:
    return is_secret_file(entry.name) and entry.is_file(follow_symlinks=False)


def present_secret_files(root: Path, paths: list[str]) -> list[str]:
    """Those of ``paths`` that are still regular files, reached without following links
    (what the sandbox may mount over: a mount never creates a missing file)."""
    out = []
    for rel in paths:
        names = rel.split("/")
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for name in names[:-1]:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
            info = os.stat(names[-1], dir_fd=fd, follow_symlinks=False)
            if st.S_ISREG(info.st_mode):
                out.append(rel)
        except OSError:
            continue
        finally:
            os.close(fd)
    return out
