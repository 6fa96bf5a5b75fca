"""What stands in for a hidden file: its content as a role sees it, and the masks tree
(each hidden file's stand-in at its path) the one view lays over the workspace. Files are
read without following links."""

from __future__ import annotations

import os
import shutil
import stat as st
from pathlib import Path

from sessions_app.containment.safefs import DIR_FLAGS, READ_FLAGS
from sessions_app.containment.secretnames import NO_RULES, SecretRules
from sessions_app.containment.secretscan import is_binary, mask_text

SCAN_CAP = 16 << 20  # bytes of a file the detector reads; a larger text file is hidden whole


def shown_content(path: str, data: bytes, rules: SecretRules = NO_RULES) -> bytes:
    """What a role sees of a file's bytes: the same bytes when they hold no secret, else
    the text with its secrets masked (binary content holding one: nothing at all)."""
    binary = is_binary(data)
    text = data.decode("latin-1" if binary else "utf-8", "replace")
    masked = mask_text(text, path, rules)
    if masked == text:
        return data
    return b"" if binary else masked.encode("utf-8")


def read_fd(fd: int) -> bytes:
    """The opened file's bytes from its start, up to one past the cap."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, left = [], SCAN_CAP + 1
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def mask_write(masks: Path, rel: str, shown: Path | None, *, hidden: bool) -> None:
    """Keep the masks tree true: a hidden file's stand-in at its path (the one view lays
    this tree over the workspace: one mount however many files are hidden)."""
    target = masks / rel
    if not hidden:
        if target.is_file() or target.is_symlink():
            target.unlink()
            _prune_empty(target.parent, masks)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".acode-mask-{os.getpid()}-{target.name}"[:255])
    tmp.unlink(missing_ok=True)
    if shown is not None and shown.is_file():
        shutil.copyfile(shown, tmp)
    else:
        tmp.write_bytes(b"")
    os.chmod(tmp, 0o444)
    os.replace(tmp, target)


def _prune_empty(directory: Path, top: Path) -> None:
    while directory != top and directory.is_relative_to(top):
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def read_nofollow(root: Path, rel: str) -> bytes | None:
    """The file's bytes (up to one past the cap), read without following links."""
    names = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in names[:-1]:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        file_fd = os.open(names[-1], READ_FLAGS, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        if not st.S_ISREG(os.fstat(file_fd).st_mode):
            return None
        os.set_blocking(file_fd, True)
        return read_fd(file_fd)
    finally:
        os.close(file_fd)
