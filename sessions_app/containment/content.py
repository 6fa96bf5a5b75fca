"""Where the content of a pending change is kept, by its git blob id.

A pending change records the id of exactly the bytes that were written, and for a managed
workspace the bytes themselves go into its git object store (server state, never mounted
into a sandbox), written in-process (``gitobjects``: no git program per file). Approval
builds the commit from those ids, so what reaches the branch is what the approval's digest
covered, whatever the work tree holds by then. An attached workspace has no branch: its
changes are only hashed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from sessions_app.containment.gitobjects import blob_from_fd, open_repository


class ContentStore:
    """Blob ids for file content; with ``git_dir``, the blobs are also stored there."""

    def __init__(self, git_dir: Path | None) -> None:
        self.git_dir = git_dir
        self._repo: Any = None

    def _repository(self) -> Any:
        if self._repo is None:
            assert self.git_dir is not None
            self._repo = open_repository(self.git_dir)
        return self._repo

    def put_fd(self, fd: int) -> str:
        """The blob id of the opened file's whole content (read from its start)."""
        os.lseek(fd, 0, os.SEEK_SET)
        if self.git_dir is None:
            return _sha1_blob_id(fd)
        return blob_from_fd(self._repository(), fd)

    def id_of_fd(self, fd: int) -> str:
        """The blob id of the opened file's whole content, without storing it."""
        os.lseek(fd, 0, os.SEEK_SET)
        return _sha1_blob_id(fd)

    def put_bytes(self, data: bytes) -> str:
        """The blob id of ``data`` (stored when there is a git directory)."""
        if self.git_dir is None:
            return hashlib.sha1(
                f"blob {len(data)}\0".encode() + data, usedforsecurity=False
            ).hexdigest()
        return str(self._repository().create_blob(data))

    def get(self, blob: str) -> bytes:
        """The content stored under ``blob`` (KeyError when this store does not hold it)."""
        if self.git_dir is None:
            raise KeyError(blob)
        return bytes(self._repository()[blob].data)


def _sha1_blob_id(fd: int) -> str:
    size = os.fstat(fd).st_size
    digest = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    read = 0
    while chunk := os.read(fd, 1 << 20):
        digest.update(chunk)
        read += len(chunk)
    if read != size:  # pragma: no cover - the layer's files no longer change
        raise OSError(f"the file changed while it was hashed ({read} of {size} bytes)")
    return digest.hexdigest()
