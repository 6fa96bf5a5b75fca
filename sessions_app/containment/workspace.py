"""A session's workspace as tools see it: its files and the commands run in it.

``workspace_files`` lists files through ``safegit`` (``.gitignore`` honoured, none of the
repository's programs run) or ``safefs.walk``; ``check_argv`` checks the shape of a
command. What a command wrote is applied (or not) in ``sessions_app.containment.writes``.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from sessions_app.containment.safefs import Refused, WorkspaceFS
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
MAX_ARGS = 1000
MAX_ARGV_BYTES = 128 * 1024
# Whole-token shell syntax: the model expected a shell. Commands run without one.
SHELL_TOKENS = frozenset({";", "&&", "||", "|", "&", ">", ">>", "<", "<<", "2>&1", "|&"})
SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", "site-packages", "dist", "build", ".tox", "vendor", ".idea", ".cache"}
)  # fmt: skip


class RuleRefused(Refused):
    """A refusal that names the rule which decided (``snapshot``, ``argv``...)."""

    def __init__(self, reason: str, rule: str) -> None:
        super().__init__(reason)
        self.rule = rule


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


def check_argv(argv: object) -> list[str]:
    """A command as a bounded list of UTF-8 strings without NUL or whole-token shell syntax."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise RuleRefused('commands are argument lists of strings, e.g. ["pytest", "-q"]', "argv")
    if not argv[0].strip():
        raise RuleRefused("the program name is empty", "argv")
    if len(argv) > MAX_ARGS:
        raise RuleRefused(f"a command has at most {MAX_ARGS} arguments", "argv")
    size = 0
    for arg in argv:
        if "\0" in arg:
            raise RuleRefused("command arguments may not contain NUL bytes", "argv")
        try:
            size += len(arg.encode("utf-8")) + 1
        except UnicodeEncodeError:
            raise RuleRefused(
                "a command argument is not valid UTF-8 (it has a lone surrogate)", "argv"
            ) from None
        if arg in SHELL_TOKENS:
            raise RuleRefused(
                f"shell operator {arg!r}: commands run without a shell, so chaining, pipes "
                "and redirection do not exist; run one program per call",
                "argv",
            )
    if size > MAX_ARGV_BYTES:
        raise RuleRefused(f"the command line is longer than {MAX_ARGV_BYTES} bytes", "argv")
    return list(argv)
