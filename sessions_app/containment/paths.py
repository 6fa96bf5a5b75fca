"""Workspace-relative paths as tools may name them, and the refusal every check raises."""

from __future__ import annotations

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


class Refused(Exception):
    """A path or operation that must not be used; ``reason`` says why in plain words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def split_path(rel: object, *, directory: bool = False) -> list[str]:
    """The components of a workspace-relative path, or ``Refused`` with the reason.

    Refuses non-strings, NUL, text that is not valid UTF-8 (lone surrogates), absolute
    paths, ``..``, empty components, over-long paths or names, and ``.git`` anywhere.
    ``.`` components are dropped; ``""`` or ``"."`` (the root) only when ``directory``.
    """
    if not isinstance(rel, str):
        raise Refused("a path must be a string")
    if "\0" in rel:
        raise Refused("paths may not contain NUL bytes")
    try:
        size = len(rel.encode("utf-8"))
    except UnicodeEncodeError:
        raise Refused("the path is not valid UTF-8 (it contains a lone surrogate)") from None
    if size > MAX_PATH_BYTES:
        raise Refused(f"the path is longer than {MAX_PATH_BYTES} bytes")
    if rel.startswith("/"):
        raise Refused(f"{rel!r}: absolute paths are not allowed; use one relative to the workspace")
    if directory and rel.endswith("/") and rel.strip("/"):
        rel = rel[:-1]
    names: list[str] = []
    for name in rel.split("/") if rel not in ("", ".") else []:
        if name == "":
            raise Refused(f"{rel!r}: empty path component (a doubled or trailing '/')")
        if name == "..":
            raise Refused(f"{rel!r}: '..' is not allowed in paths")
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise Refused(f"{rel!r}: a component is longer than {MAX_NAME_BYTES} bytes")
        if name.lower() == ".git":
            raise Refused(f"{rel!r}: the workspace's .git directory is off limits to tools")
        if name != ".":
            names.append(name)
    if not names and not directory:
        raise Refused("a file path relative to the workspace is required")
    return names
