"""What stands in for a hidden file: its content as a role sees it, and the masks tree
(each hidden file's stand-in at its path) the one view lays over the workspace. Files are
read without following links."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat as st
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from sessions_app.containment.safefs import DIR_FLAGS, READ_FLAGS
from sessions_app.containment.secretnames import NO_RULES, SecretRules
from sessions_app.containment.secretscan import is_binary, mask_text, secret_by_name

SCAN_CAP = 16 << 20  # bytes of a file the detector reads; a larger text file is hidden whole


def shown_content(path: str, data: bytes, rules: SecretRules = NO_RULES) -> bytes:
    """What a role sees of a file's bytes: the same bytes when they hold no secret, else
    the text with its secrets masked (binary content holding one: nothing at all).

    A text is masked as the file it is and as output (what ``cat`` of it would be
    redacted to), so no encoding of it a command makes shows more than ``cat`` does.
    Binary content is read as text, as UTF-16 when it is that, and inside gzip, tar and
    zip archives (names and members, bounded): a secret anywhere hides the whole file."""
    if is_binary(data):
        return b"" if _binary_holds_secret(path, data, rules, depth=0) else data
    text = data.decode("utf-8", "replace")
    masked = mask_text(mask_text(text, path, rules), "", rules)
    return data if masked == text else masked.encode("utf-8")


# Members and bytes of an archive read, beyond which it is hidden whole (a zip bomb).
ARCHIVE_MEMBERS = 2000
_ARCHIVE_BYTES = 64 << 20


def _binary_holds_secret(path: str, data: bytes, rules: SecretRules, *, depth: int) -> bool:
    if mask_text(data.decode("latin-1"), path, rules) != data.decode("latin-1"):
        return True
    try:
        inner = list(inner_files(data, SCAN_CAP))
    except _TooMany:
        return True
    for name, content in inner:
        if name and secret_by_name(name, rules):
            return True
        if content is None:
            continue
        if is_binary(content):
            if depth < 2 and _binary_holds_secret(name or path, content, rules, depth=depth + 1):
                return True
            continue
        text = content.decode("utf-8", "replace")
        if mask_text(mask_text(text, name or path, rules), "", rules) != text:
            return True
    return False


class _TooMany(Exception):
    """An archive with more members than are read."""


def inner_files(data: bytes, cap: int) -> Iterator[tuple[str, bytes | None]]:
    """What binary ``data`` holds as (name, content): its text when it is UTF-16, the
    stream of a gzip file, the members of a tar or zip archive; at most ``cap`` bytes each."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) > 3 and data[1] == 0 and data[3] == 0):
        order = "utf-16-be" if data[:2] == b"\xfe\xff" else "utf-16-le"
        yield "", data.decode(order, "replace").lstrip("\ufeff").encode("utf-8")
    if data[:2] == b"\x1f\x8b":
        with contextlib.suppress(zlib.error):
            yield "", zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, cap)
    if len(data) > 262 and data[257:262] == b"ustar":
        with (
            contextlib.suppress(tarfile.TarError, EOFError, OSError),
            tarfile.open(fileobj=io.BytesIO(data)) as tar,
        ):
            for number, member in enumerate(tar):
                if number >= ARCHIVE_MEMBERS:
                    raise _TooMany
                handle = tar.extractfile(member) if member.isfile() else None
                yield member.name, handle.read(cap) if handle else None
                if tar.offset > _ARCHIVE_BYTES:
                    raise _TooMany
    if data[:4] == b"PK\x03\x04":
        with (
            contextlib.suppress(zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError),
            zipfile.ZipFile(io.BytesIO(data)) as archive,
        ):
            read = 0
            for number, info in enumerate(archive.infolist()):
                if number >= ARCHIVE_MEMBERS:
                    raise _TooMany
                read += min(info.file_size, cap)
                if read > _ARCHIVE_BYTES:
                    raise _TooMany
                with archive.open(info) as stream:
                    yield info.filename, stream.read(cap)


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
