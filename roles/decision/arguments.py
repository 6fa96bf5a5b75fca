"""A call's arguments as the decision reads them: workspace-relative paths and command
argument lists, and the refusal every check raises.

Pure functions of their input (no file system): the tool decision (``roles.decision``) and
containment (``sessions_app.containment``, which re-exports them) share them, so a path or a
command is judged the same way before a call runs and while it runs.
"""

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


def normalised_path(raw: object, *, directory: bool = False) -> str:
    """The workspace-relative form of a model-given path, or ``Refused`` saying why."""
    return "/".join(split_path(raw, directory=directory)) or "."


MAX_ARGS = 1000
MAX_ARGV_BYTES = 128 * 1024


class RuleRefused(Refused):
    """A refusal that names the rule which decided (``snapshot``, ``argv``...)."""

    def __init__(self, reason: str, rule: str) -> None:
        super().__init__(reason)
        self.rule = rule


def check_argv(argv: object) -> list[str]:
    """A command as a bounded list of UTF-8 strings without NUL.

    An argument is data: commands are argument lists and no shell runs them, so ``|``,
    ``>`` or ``;`` is an argument like any other (``grep -F "|" file``). A command that
    does run a shell (``sh -c``) is judged by the command rules (an interpreter's code
    flags, ``roles.commands.interpreters``)."""
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
    if size > MAX_ARGV_BYTES:
        raise RuleRefused(f"the command line is longer than {MAX_ARGV_BYTES} bytes", "argv")
    return list(argv)
