"""Keeping tools inside a session's workspace: paths and commands, checked before they run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

BINARY_SNIFF = 8192
SHELL_OPERATORS = (";", "&&", "||", "|", "`", "$(", "${", ">", "<", "\n", "&")
# Programs that would run another command line or change identity: never run directly.
FORBIDDEN_PROGRAMS = frozenset(
    {
        "sh",
        "bash",
        "zsh",
        "dash",
        "ksh",
        "fish",
        "csh",
        "tcsh",
        "busybox",
        "env",
        "xargs",
        "nohup",
        "setsid",
        "sudo",
        "su",
        "doas",
        "nice",
        "timeout",
        "stdbuf",
        "script",
        "expect",
        "ssh",
        "eval",
        "exec",
        "command",
        "watch",
        "chroot",
        "unshare",
        "nsenter",
    }
)
SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        "dist",
        "build",
        ".tox",
        "vendor",
        ".idea",
        ".cache",
    }
)


class Refused(Exception):
    """A path or command that must not be used; ``reason`` says why in plain words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class WorkspacePath:
    """A checked path: the real location and the workspace-relative POSIX form."""

    real: Path
    relative: str


def resolve(root: Path, raw: object, *, for_write: bool = False) -> WorkspacePath:
    """Resolve a model-given path inside the workspace, or raise Refused.

    Refuses absolute paths, ``~``, ``..``, NUL bytes, anything that resolves (through
    symlinks) outside the workspace, device files, sockets and FIFOs, and writes into ``.git``.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise Refused("a non-empty path relative to the workspace is required")
    if "\x00" in raw:
        raise Refused("paths may not contain NUL bytes")
    text = raw.strip().replace("\\", "/")
    if text.startswith("~"):
        raise Refused(f"{raw!r}: home-relative paths are not allowed")
    pure = PurePosixPath(text)
    if pure.is_absolute():
        raise Refused(
            f"{raw!r}: absolute paths are not allowed; use a path relative to the workspace"
        )
    if ".." in pure.parts:
        raise Refused(f"{raw!r}: '..' is not allowed in paths")
    parts = [p for p in pure.parts if p not in ("", ".")]
    relative = "/".join(parts) or "."
    root_real = root.resolve()
    real = (root_real / relative).resolve()
    if real != root_real and root_real not in real.parents:
        raise Refused(f"{raw!r} leads outside the workspace (through a symbolic link)")
    if real.exists() and not (real.is_file() or real.is_dir()):
        raise Refused(f"{raw!r} is not a regular file or directory (device, socket or FIFO)")
    if for_write and parts and parts[0] == ".git":
        raise Refused(f"{raw!r}: the workspace's .git directory is not writable by tools")
    rel_real = real.relative_to(root_real).as_posix() if real != root_real else "."
    return WorkspacePath(real, rel_real)


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF]


def workspace_files(root: Path) -> list[str]:
    """Workspace files (POSIX, relative), honouring .gitignore when it is a git repository."""
    git = shutil.which("git")
    if git and (root / ".git").exists():
        proc = subprocess.run(
            [git, "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        if proc.returncode == 0:
            names = [n for n in proc.stdout.decode("utf-8", "replace").split("\0") if n]
            return sorted(n for n in names if not (set(PurePosixPath(n).parts[:-1]) & SKIP_DIRS))
    out: list[str] = []
    stack = [""]
    while stack:  # os.scandir: one stat per entry, no Path objects per file
        prefix = stack.pop()
        try:
            entries = list(os.scandir(root / prefix if prefix else root))
        except OSError:
            continue
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS and not entry.name.startswith(".git"):
                    stack.append(rel + "/")
            elif entry.is_file(follow_symlinks=False):
                out.append(rel)
    return sorted(out)


def check_argv(argv: object) -> list[str]:
    """A command as an argument list, with no shell syntax and no command-running programs."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise Refused('commands are argument lists of strings, e.g. ["pytest", "-q"]')
    if not argv[0].strip():
        raise Refused("the program name is empty")
    for arg in argv:
        for op in SHELL_OPERATORS:
            if op in arg:
                raise Refused(
                    f"shell operator {op.strip() or 'newline'!r} in {arg!r}: commands run without a "
                    "shell, so chaining, pipes, redirection and substitution are refused"
                )
    program = PurePosixPath(argv[0]).name
    if program in FORBIDDEN_PROGRAMS:
        raise Refused(f"{program!r} runs other commands or changes identity and is never allowed")
    return list(argv)


def command_line(argv: list[str]) -> str:
    """The normalised text command patterns are matched against."""
    return " ".join(argv)


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    output: str
    timed_out: bool
    truncated: bool


def run_command(root: Path, argv: list[str], *, timeout: float, output_cap: int) -> CommandResult:
    """Run without a shell, in the workspace, with a minimal environment, timeout and output cap."""
    path_dirs = [str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
    env = {
        "PATH": os.pathsep.join(path_dirs),
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    program = argv[0]
    if "/" in program:
        executable = str(resolve(root, program).real)
    else:
        found = shutil.which(program, path=env["PATH"])
        if found is None:
            raise Refused(f"program {program!r} was not found")
        executable = found
    proc = subprocess.Popen(
        [executable, *argv[1:]],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        shell=False,
    )
    timed_out = False
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        raw, _ = proc.communicate()
    truncated = len(raw) > output_cap
    text = raw[:output_cap].decode("utf-8", "replace")
    if truncated:
        text += f"\n[output truncated at {output_cap} bytes]"
    return CommandResult(proc.returncode if not timed_out else -9, text, timed_out, truncated)
