"""What a role may write: the one write-path rule, and the permission each kind of change
needs. The executor asks it before a file tool runs, and the server asks it for every
entry a command left in its copy-on-write layer, so a path gets the same answer either
way."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from roles.gitpaths import git_path_problem, is_git_path
from roles.globs import glob_matches

# The permission each kind of change needs, whichever way it is made: by a file tool
# (``write_file`` modifies, ``create_file`` creates, ``delete_file`` deletes) or by a
# command, whose layer the server applies change by change.
CHANGE_PERMISSIONS: Mapping[str, str] = {
    "created": "create_files",
    "modified": "write_files",
    "deleted": "delete_files",
}
_CHANGE_VERBS = {"created": "create", "modified": "write", "deleted": "delete"}
# C0 and C1 control characters and DEL: a newline or escape in a file name could forge
# the lines of a diff shown to a reviewer.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
FILE_NAME_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"  # the same rule, for the API schema
GIT_PATH_REFUSED = "ACODE-CHG-001"


@dataclass(frozen=True)
class WriteRule:
    """Whether a path may change; ``rule`` names what decided (for the audit)."""

    allowed: bool
    rule: str
    reason: str = ""
    code: str = ""  # the ACODE code of a refusal, when it is not the role's (ROL-003)


@dataclass(frozen=True)
class WritePolicy:
    """What one role may write: the one write-path rule.

    The executor asks it before a file tool runs, and the server asks it for every entry a
    command left in its copy-on-write layer, so a path gets the same answer either way.
    """

    permissions: frozenset[str] = frozenset()
    write_paths: tuple[str, ...] = ()
    role_name: str = "this role"

    @property
    def may_write(self) -> bool:
        """Whether the role may make any change at all (a command then gets a writable
        layer; each change it leaves is still checked)."""
        return not self.permissions.isdisjoint(CHANGE_PERMISSIONS.values())

    def check(self, path: str, *, change: str, kind: str = "file", mode: int = 0o644) -> WriteRule:
        """May ``path`` (workspace-relative) be ``change``d (created, modified, deleted) to
        become a ``kind`` with ``mode``?

        Refusal rules, in order: ``git_dir`` (git metadata, anywhere), ``git_path`` (a name
        git cannot store, ``roles.gitpaths``: ACODE-CHG-001), ``write_permission``
        (the change's permission, ``CHANGE_PERMISSIONS``), ``file_name`` (not UTF-8, or
        control characters), ``write_paths`` (outside the role's globs), ``file_kind``
        (links, devices, FIFOs, sockets: only regular files are kept), ``file_mode``
        (setuid, setgid or sticky bits).
        """
        if is_git_path(path):
            return WriteRule(False, "git_dir", f"{path!r}: git metadata is never written")
        if problem := git_path_problem(path):
            return WriteRule(False, "git_path", problem, GIT_PATH_REFUSED)
        needed = CHANGE_PERMISSIONS.get(change)
        if needed is None or needed not in self.permissions:
            verb = _CHANGE_VERBS.get(change, "write")
            return WriteRule(
                False, "write_permission", f"Role {self.role_name} may not {verb} files."
            )
        problem = _file_name_problem(path)
        if problem:
            return WriteRule(False, "file_name", problem)
        matched = next((g for g in self.write_paths if path_allowed(path, [g])), None)
        if self.write_paths and matched is None:
            return WriteRule(
                False,
                "write_paths",
                f"Role {self.role_name} may write only {', '.join(self.write_paths)}; "
                f"{path!r} is outside those paths.",
            )
        if kind != "file":
            return WriteRule(
                False, "file_kind", f"{path!r} is a {kind}: only regular files are kept"
            )
        if mode & 0o7000:
            return WriteRule(
                False,
                "file_mode",
                f"{path!r} has mode {mode:o}: setuid, setgid and sticky bits are refused",
            )
        return WriteRule(True, f"write_paths: {matched}" if matched else "write_paths: anywhere")


def _file_name_problem(path: str) -> str:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "the file name is not valid UTF-8"
    if CONTROL.search(path):
        return f"{path!r}: file names with control characters are refused"
    return ""


def path_allowed(relative_path: str, write_paths: Sequence[str]) -> bool:
    """True when ``relative_path`` (POSIX, inside the workspace) matches a write glob.

    ``**`` matches any number of directories, ``*`` stays within one (``roles.globs``). No
    globs: anywhere.
    """
    if not write_paths:
        return True
    return any(glob_matches(glob, relative_path) for glob in write_paths)


def glob_problem(glob: str) -> str | None:
    """Why a write-path glob is unusable, or None."""
    if not glob.strip():
        return "empty glob"
    if glob.startswith("/") or glob.startswith("~"):
        return f"{glob!r} must be relative to the workspace"
    if any(part == ".." for part in glob.split("/")):
        return f"{glob!r} must not contain '..'"
    return None
