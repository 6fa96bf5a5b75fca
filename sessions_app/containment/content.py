"""Where the content of a pending change is kept, by its git blob id.

A pending change records the id of exactly the bytes that were written, and for a managed
workspace the bytes themselves go into its git object store (server state, never mounted
into a sandbox). Approval builds the commit from those ids, so what reaches the branch is
what the approval's digest covered, whatever the work tree holds by then. An attached
workspace has no branch: its changes are only hashed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sessions_app.containment.safegit import GitRefused, run_git

BLOB_ID_LENGTHS = (40, 64)  # SHA-1 and SHA-256 repositories


class ContentStore:
    """Blob ids for file content; with ``git_dir``, the blobs are also stored there."""

    def __init__(self, git_dir: Path | None) -> None:
        self.git_dir = git_dir

    def put_fd(self, fd: int) -> str:
        """The blob id of the opened file's whole content (read from its start)."""
        os.lseek(fd, 0, os.SEEK_SET)
        if self.git_dir is None:
            return _sha1_blob_id(fd)
        outcome = run_git(self.git_dir, ["hash-object", "-w", "--no-filters", "--stdin"], stdin=fd)
        blob = outcome.stdout.strip()
        if outcome.exit_code != 0 or len(blob) not in BLOB_ID_LENGTHS:
            raise GitRefused(f"git could not store the content: {outcome.stderr.strip()[:300]}")
        return blob

    def put_bytes(self, data: bytes) -> str:
        """The blob id of ``data`` (stored when there is a git directory)."""
        fd = os.memfd_create("acode-content", os.MFD_CLOEXEC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view[: 1 << 20]) :]
            return self.put_fd(fd)
        finally:
            os.close(fd)


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
