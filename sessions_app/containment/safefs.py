"""Workspace file access that cannot leave the workspace, whatever the agent put in it.

Every path is walked one component at a time from a directory fd of the workspace root,
each directory opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's fd and the
final file with ``O_NOFOLLOW``. Symbolic links are never followed (not even ones that stay
inside), so a link, or a directory swapped for a link while we work, can only make a call
fail, never reach outside. What was opened is checked with ``fstat`` on the fd: only regular
files with one link (a hard link may be the other name of an outside file) and directories.
``.git`` is never opened. Policy violations raise ``Refused``; ordinary failures (a missing
file) raise the usual ``OSError`` subclasses.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat as st
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

# Here too: callers name them from safefs, where paths are used.
from sessions_app.containment.paths import Refused, split_path

WRITE_CHUNK = 1 << 16
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
DEFAULT_SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".cache", "dist", "build"}
)  # fmt: skip


@dataclass(frozen=True)
class FileInfo:
    """What ``stat`` reports: kind is "file", "dir", "symlink" or "other"."""

    path: str
    kind: str
    size: int
    mtime: float
    nlink: int


class WorkspaceFS:
    """File operations confined to one workspace, through a directory fd of its root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        """Release the root fd (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> WorkspaceFS:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def _dir(self, names: list[str], *, create: bool = False) -> Iterator[int]:
        """The fd of the directory ``names`` leads to, each step opened without following."""
        fd = os.open(".", DIR_FLAGS, dir_fd=self._fd)
        try:
            for name in names:
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(name, 0o755, dir_fd=fd)
                child = _open_dir(name, fd)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def read_bytes(self, rel: str, max_bytes: int, *, truncate: bool = False) -> bytes:
        """The file's bytes; over ``max_bytes`` it is refused, or cut when ``truncate``."""
        *parents, name = split_path(rel)
        with self._dir(parents) as d:
            _precheck(d, name, rel)
            fd = os.open(name, READ_FLAGS, dir_fd=d)
            try:
                info = os.fstat(fd)
                _check_file(info, rel)
                if info.st_size > max_bytes and not truncate:
                    raise Refused(f"{rel!r} is {info.st_size} bytes, over the {max_bytes} limit")
                os.set_blocking(fd, True)
                chunks, left = [], max_bytes + 1  # one more: a file that grew is noticed
                while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                    chunks.append(chunk)
                    left -= len(chunk)
                data = b"".join(chunks)
                if len(data) > max_bytes and not truncate:
                    raise Refused(f"{rel!r} is over the {max_bytes}-byte limit")
                return data[:max_bytes]
            finally:
                os.close(fd)

    @contextmanager
    def opened(self, rel: str) -> Iterator[int]:
        """The regular single-link file at ``rel``, opened for reading (else ``Refused``)."""
        *parents, name = split_path(rel)
        with self._dir(parents) as d:
            _precheck(d, name, rel)
            fd = os.open(name, READ_FLAGS, dir_fd=d)
            try:
                _check_file(os.fstat(fd), rel)
                os.set_blocking(fd, True)
                yield fd
            finally:
                os.close(fd)

    directory = _dir  # the opened directory ``names`` lead to (``create``: made on the way)

    def read_text(self, rel: str, max_bytes: int, *, truncate: bool = False) -> str:
        """The file decoded as UTF-8 (undecodable bytes replaced)."""
        return self.read_bytes(rel, max_bytes, truncate=truncate).decode("utf-8", "replace")

    def write_bytes(
        self, rel: str, data: bytes, *, create_parents: bool = True, mode: int | None = None
    ) -> None:
        """Replace the file atomically: a crash or error half way leaves the original intact.

        The new content goes to a fresh temporary file (``O_EXCL | O_NOFOLLOW``) in the same
        opened directory, is fsynced, then renamed over the name through that directory fd.
        ``mode`` (permission bits) defaults to the replaced file's, or 0644.
        """
        self._replace(rel, lambda fd: _write_all(fd, data), create_parents, mode)

    def write_from(self, rel: str, source: int, *, mode: int) -> None:
        """``write_bytes`` of everything readable from the opened file ``source``, streamed
        (never held in memory whole)."""

        def copy(fd: int) -> None:
            os.lseek(source, 0, os.SEEK_SET)
            while chunk := os.read(source, 1 << 20):
                _write_all(fd, chunk)

        self._replace(rel, copy, True, mode)

    def _replace(
        self, rel: str, write: Callable[[int], None], create_parents: bool, mode: int | None
    ) -> None:
        *parents, name = split_path(rel)
        with self._dir(parents, create=create_parents) as d:
            keep = 0o644
            try:
                info = os.stat(name, dir_fd=d, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                _check_file(info, rel)  # never replace a link, directory or special file
                keep = st.S_IMODE(info.st_mode) & 0o777
            tmp = f".acode-{secrets.token_hex(8)}.tmp"
            fd = os.open(tmp, TMP_FLAGS, 0o600, dir_fd=d)
            try:
                try:
                    os.fchmod(fd, (keep if mode is None else mode) & 0o777)
                    write(fd)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.rename(tmp, name, src_dir_fd=d, dst_dir_fd=d)
            except BaseException:
                with suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
                raise
            with suppress(OSError):
                os.fsync(d)  # the rename itself survives a crash

    def write_text(self, rel: str, content: str, *, create_parents: bool = True) -> None:
        """``write_bytes`` of the UTF-8 encoding of ``content``."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused("the content is not valid UTF-8 (it has a lone surrogate)") from None
        self.write_bytes(rel, data, create_parents=create_parents)

    def create_dirs(self, rel: str) -> None:
        """Make the directory and its missing parents, one component at a time."""
        with self._dir(split_path(rel), create=True):
            pass

    def delete(self, rel: str) -> None:
        """Remove a file (or a symbolic link itself, never what it points to)."""
        *parents, name = split_path(rel)
        with self._dir(parents) as d:
            if st.S_ISDIR(os.stat(name, dir_fd=d, follow_symlinks=False).st_mode):
                raise Refused(f"{rel!r} is a directory; only files are deleted")
            os.unlink(name, dir_fd=d)

    def remove_empty_dir(self, rel: str) -> bool:
        """Remove the directory at ``rel`` if it is empty (and a directory); whether it was."""
        *parents, name = split_path(rel)
        try:
            with self._dir(parents) as d:
                os.rmdir(name, dir_fd=d)
        except (OSError, Refused):
            return False
        return True

    def mode(self, rel: str) -> int:
        """The permission bits of ``rel`` itself (a link is not followed)."""
        return st.S_IMODE(self._lstat(rel)[1].st_mode)

    def exists(self, rel: str) -> bool:
        """Whether anything (even a link) is at ``rel``; ``Refused`` if the path is."""
        try:
            self.stat(rel)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def stat(self, rel: str) -> FileInfo:
        """Kind, size and mtime of ``rel`` itself (links are reported, not followed)."""
        names, info = self._lstat(rel)
        return FileInfo("/".join(names) or ".", _kind(info.st_mode), info.st_size,
                        info.st_mtime, info.st_nlink)  # fmt: skip

    def _lstat(self, rel: str) -> tuple[list[str], os.stat_result]:
        """``rel``'s names and the status of what is there (a link itself, not followed)."""
        names = split_path(rel, directory=True)
        with self._dir(names[:-1]) as d:
            return names, os.stat(names[-1] if names else ".", dir_fd=d, follow_symlinks=False)

    def list_dir(self, rel: str = ".") -> list[FileInfo]:
        """The directory's entries (``.git`` hidden), directories first, then by name."""
        names = split_path(rel, directory=True)
        out = []
        with self._dir(names) as d, os.scandir(d) as entries:
            for entry in entries:
                if entry.name.lower() == ".git":
                    continue
                info = entry.stat(follow_symlinks=False)
                path = "/".join([*names, entry.name])
                out.append(FileInfo(path, _kind(info.st_mode), info.st_size, info.st_mtime,
                                    info.st_nlink))  # fmt: skip
        return sorted(out, key=lambda f: (f.kind != "dir", f.path))

    def walk(self, rel: str = ".", skip_dirs: frozenset[str] = DEFAULT_SKIP_DIRS) -> Iterator[str]:
        """Workspace-relative POSIX paths of regular single-link files under ``rel``.

        Depth first: a directory's files by name, then its subdirectories by name.

        Symbolic links (to files or directories) and hard-linked files are skipped, as are
        ``skip_dirs``, ``.git`` and names that are not UTF-8; nothing is ever followed.
        """
        names = split_path(rel, directory=True)

        def descend(rel: str) -> bool:
            name = rel.rpartition("/")[2]
            return _addressable(name) and name not in skip_dirs

        with self._dir(names) as top:
            yield from walk_tree(top, "/".join(names), descend=descend, keep=_single_file)


def walk_tree(
    top: int,
    prefix: str,
    *,
    descend: Callable[[str], bool],
    keep: Callable[[os.DirEntry[str]], bool],
) -> Iterator[str]:
    """Paths (``prefix`` joined) of the entries ``keep`` accepts under the opened directory
    ``top`` (left open), depth first: a directory's by name, then its subdirectories'
    (``descend`` gets each one's path, ``prefix`` joined).

    The one descriptor walk: each directory is opened relative to its parent's fd with
    ``O_NOFOLLOW``, so links are never followed; a directory ``descend`` refuses is not
    entered, and one replaced by a link meanwhile is skipped.
    """
    stack = [(os.dup(top), prefix)]
    try:
        while stack:
            fd, path = stack.pop()
            try:
                files, subdirs = _scan(fd, path, descend, keep)
                for name in reversed(subdirs):
                    with suppress(OSError, Refused):
                        stack.append((_open_dir(name, fd), _join(path, name)))
            finally:
                os.close(fd)
            yield from files
    finally:
        for fd, _ in stack:
            os.close(fd)


def _open_dir(name: str, parent: int) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_link(name, parent)):
            raise Refused(f"{name!r} is a symbolic link; links are never followed") from None
        if exc.errno == errno.ENOTDIR:
            raise Refused(f"{name!r} is not a directory") from None
        raise


def _is_link(name: str, parent: int) -> bool:
    try:
        return st.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _precheck(d: int, name: str, rel: str) -> None:
    """Refuse by lstat before opening: opening a device node can have side effects."""
    info = os.stat(name, dir_fd=d, follow_symlinks=False)
    _check_file(info, rel)


def _check_file(info: os.stat_result, rel: str) -> None:
    mode = info.st_mode
    if st.S_ISLNK(mode):
        raise Refused(f"{rel!r} is a symbolic link; links are never followed")
    if st.S_ISDIR(mode):
        raise Refused(f"{rel!r} is a directory")
    if not st.S_ISREG(mode):
        raise Refused(f"{rel!r} is not a regular file (device, socket or FIFO)")
    if info.st_nlink > 1:
        raise Refused(f"{rel!r} has {info.st_nlink} hard links; hard-linked files are refused")


def _kind(mode: int) -> str:
    if st.S_ISLNK(mode):
        return "symlink"
    if st.S_ISDIR(mode):
        return "dir"
    return "file" if st.S_ISREG(mode) else "other"


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _scan(
    fd: int,
    prefix: str,
    descend: Callable[[str], bool],
    keep: Callable[[os.DirEntry[str]], bool],
) -> tuple[list[str], list[str]]:
    """The kept entries (as paths) and the subdirectory names to enter of an opened
    directory, each sorted."""
    files, subdirs = [], []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if descend(_join(prefix, entry.name)):
                    subdirs.append(entry.name)
            elif keep(entry):
                files.append(_join(prefix, entry.name))
    return sorted(files), sorted(subdirs)


def _addressable(name: str) -> bool:
    """A name ``split_path`` can address: UTF-8, and not ``.git`` (in any case)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return name.lower() != ".git"


def _single_file(entry: os.DirEntry[str]) -> bool:
    """A regular file with one link (a hard link may be the other name of an outside file)."""
    return (
        _addressable(entry.name)
        and entry.is_file(follow_symlinks=False)
        and entry.stat(follow_symlinks=False).st_nlink == 1
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view[:WRITE_CHUNK])
        view = view[written:]


def read_bytes(root: Path, rel: str, max_bytes: int, *, truncate: bool = False) -> bytes:
    """One-shot ``WorkspaceFS(root).read_bytes``."""
    with WorkspaceFS(root) as fs:
        return fs.read_bytes(rel, max_bytes, truncate=truncate)


def walk(root: Path, skip_dirs: frozenset[str] = DEFAULT_SKIP_DIRS) -> Iterator[str]:
    """One-shot ``WorkspaceFS(root).walk`` over the whole workspace."""
    with WorkspaceFS(root) as fs:
        yield from fs.walk(".", skip_dirs)
