"""A session's workspace as tools see it: its files and the commands run in it.

``workspace_files`` lists files through ``safegit`` (``.gitignore`` honoured, none of the
repository's programs run) or ``safefs.walk``; ``check_argv`` checks the shape of a
command. What a command wrote is applied (or not) in ``sessions_app.containment.writes``.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from roles.decision.arguments import Refused, RuleRefused, check_argv
from sessions_app.containment.safefs import WorkspaceFS
from sessions_app.containment.safegit import GitRefused, run_git

__all__ = [
    "BINARY_SNIFF",
    "Refused",
    "RuleRefused",
    "check_argv",
    "is_binary",
    "workspace_files",
]

BINARY_SNIFF = 8192
SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", "site-packages", "dist", "build", ".tox", "vendor", ".idea", ".cache"}
)  # fmt: skip


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF]


def workspace_files(root: Path, git_dir: Path | None = None) -> list[str]:
    """Workspace files (POSIX, relative), honouring .gitignore when it is a git repository.

    ``git_dir`` is the session's git directory (server state); an attached workspace may
    have its own ``.git``. Only ``.gitignore`` files are read for exclusions (not
    ``core.excludesFile``, which a repository's config could point anywhere), and git runs
    through ``safegit``.
    """
    if git_dir is None and (root / ".git").is_dir() and not (root / ".git").is_symlink():
        git_dir = root / ".git"
    if git_dir is not None:
        try:
            listing = run_git(
                git_dir,
                ["ls-files", "-z", "--cached", "--others", "--exclude-per-directory=.gitignore"],
                work_tree=root,
                timeout=30,
            )
        except GitRefused:
            listing = None
        if listing is not None and listing.exit_code == 0 and not listing.truncated:
            names = {n for n in listing.stdout.split("\0") if n}
            return sorted(n for n in names if not (set(PurePosixPath(n).parts[:-1]) & SKIP_DIRS))
    with WorkspaceFS(root) as fs:
        return sorted(fs.walk(".", SKIP_DIRS))
