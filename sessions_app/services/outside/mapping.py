"""An outside agent's tool call as the acode calls it amounts to.

Claude Code and Codex name their own tools; acode decides its own (``roles.tools``). Each
outside call becomes one or more acode calls, decided each by the one decision
(``roles.decision.decide``, in ``sessions_app.services.outside.decide``):

- ``Bash`` (Codex's shell too): each simple command of the line is ``execute_command``
  with its argv; each file a redirection writes is a write; a line acode cannot read
  (``shell.Unparsable``) is refused.
- ``Write``/``Edit``/``MultiEdit``/``NotebookEdit`` and Codex's ``apply_patch``: writes
  (``create_file`` for a file not there yet, ``write_file``, ``delete_file``) at the path
  made relative to the project root (the session's workspace).
- ``Read`` → ``read_file``; ``Glob``/``LS`` → ``list_directory``; ``Grep`` →
  ``grep_search``.
- ``WebFetch``/``WebSearch`` → the ``network`` permission.
- ``mcp__<server>__<tool>`` → that MCP tool (acode's registry uses the same name), with the
  arguments as sent, so the role's argument limits apply.

A path outside the project root, or one with a symbolic link on the way, is refused here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sessions_app.services.outside.shell import Unparsable, shell_line

NETWORK = "network"


@dataclass(frozen=True)
class Call:
    """One acode call an outside call amounts to (``tool`` "" with ``permission``: a call
    that needs only that permission)."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    permission: str = ""
    reads_path: str = ""  # the project-relative file it reads (the secrets rule looks)


@dataclass(frozen=True)
class Mapped:
    """The acode calls, or the refusal (``rule``, ``reason``) of a call acode cannot map."""

    calls: tuple[Call, ...] = ()
    rule: str = ""
    reason: str = ""


class _Refused(Exception):
    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule, self.reason = rule, reason


@dataclass(frozen=True)
class Project:
    """Where the outside agent works: the project root (absolute, normalised), its current
    directory, and how to tell whether a project-relative path exists or holds a link."""

    root: str
    cwd: str
    exists: Callable[[str], bool]
    link_on_path: Callable[[list[str]], str | None]

    def relative(self, raw: object, *, directory: bool = False) -> str:
        """``raw`` (absolute, or relative to the current directory) relative to the root."""
        if not isinstance(raw, str) or not raw or "\x00" in raw or len(raw) > 4096:
            raise _Refused("path", f"{str(raw)[:200]!r} is not a path.")
        if raw.startswith("~"):
            raise _Refused("path", f"{raw[:200]!r} is outside the project ({self.root}).")
        full = posixpath.normpath(posixpath.join(self.cwd, raw))
        if full == self.root:
            if directory:
                return "."
            raise _Refused("path", "The project root is a directory, not a file.")
        if not full.startswith(self.root.rstrip("/") + "/"):
            raise _Refused("path", f"{raw[:200]!r} is outside the project ({self.root}).")
        rel = full[len(self.root.rstrip("/")) + 1 :]
        link = self.link_on_path(rel.split("/"))
        if link is not None:
            raise _Refused("path", f"{link!r} is a symbolic link: acode does not follow it.")
        return rel


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise _Refused("schema", f"{name} must be a string.")
    return value


def _write(project: Project, raw: object, *, deleted: bool = False) -> Call:
    rel = project.relative(raw)
    if deleted:
        return Call("delete_file", {"path": rel})
    tool = "write_file" if project.exists(rel) else "create_file"
    return Call(tool, {"path": rel, "content": ""})


def _bash(project: Project, tool_input: Mapping[str, Any]) -> list[Call]:
    line = tool_input.get("command", tool_input.get("cmd"))
    if isinstance(line, list) and all(isinstance(part, str) for part in line):
        return [Call("execute_command", {"argv": list(line)})]  # an argv already
    try:
        parsed = shell_line(_text(line, "command"))
    except Unparsable as exc:
        raise _Refused(
            "shell", f"acode cannot tell what this command line runs: {exc.reason}."
        ) from None
    calls = [Call("execute_command", {"argv": argv}) for argv in parsed.commands]
    for target in parsed.writes:
        if target != "/dev/null":
            calls.append(_write(project, target))
    for target in parsed.reads:
        rel = project.relative(target)
        calls.append(Call("read_file", {"path": rel}, reads_path=rel))
    for argv in parsed.commands:  # a secret named on a command line is read by it
        for arg in argv[1:]:
            if "/" in arg or "." in arg:
                try:
                    rel = project.relative(arg)
                except _Refused:
                    continue
                calls.append(Call("", permission="", reads_path=rel))
    return calls


_PATCH_MARKERS = {
    "*** Add File: ": False,
    "*** Update File: ": False,
    "*** Move to: ": False,
    "*** Delete File: ": True,
}


def _patch(project: Project, tool_input: Mapping[str, Any]) -> list[Call]:
    text = tool_input.get("patch", tool_input.get("input", tool_input.get("command")))
    if isinstance(text, list):
        text = "\n".join(str(part) for part in text)
    patch = _text(text, "patch")
    calls = []
    for line in patch.splitlines():
        for marker, deleted in _PATCH_MARKERS.items():
            if line.startswith(marker):
                calls.append(_write(project, line[len(marker) :].strip(), deleted=deleted))
    if not calls:
        raise _Refused("shell", "acode cannot tell which files this patch changes.")
    return calls


def _edits(project: Project, tool_input: Mapping[str, Any]) -> list[Call]:
    return [_write(project, tool_input.get("file_path", tool_input.get("notebook_path")))]


def _read(project: Project, tool_input: Mapping[str, Any]) -> list[Call]:
    rel = project.relative(tool_input.get("file_path"))
    return [Call("read_file", {"path": rel}, reads_path=rel)]


def _search_path(project: Project, tool_input: Mapping[str, Any]) -> str:
    raw = tool_input.get("path")
    return "." if raw in (None, "") else project.relative(raw, directory=True)


def _glob(project: Project, tool_input: Mapping[str, Any]) -> list[Call]:
    pattern = _text(tool_input.get("pattern", "*"), "pattern")
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        raise _Refused("path", f"The pattern {pattern[:200]!r} reaches outside the project.")
    return [Call("list_directory", {"path": _search_path(project, tool_input)})]


def _grep(project: Project, tool_input: Mapping[str, Any]) -> list[Call]:
    pattern = _text(tool_input.get("pattern"), "pattern")
    return [Call("grep_search", {"pattern": pattern, "path": _search_path(project, tool_input)})]


def _network(project: Project, tool_input: Mapping[str, Any]) -> list[Call]:
    return [Call("", permission=NETWORK)]


_TOOLS: Mapping[str, Callable[[Project, Mapping[str, Any]], list[Call]]] = {
    "Bash": _bash,
    "exec_command": _bash,
    "shell": _bash,
    "local_shell": _bash,
    "Write": _edits,
    "Edit": _edits,
    "MultiEdit": _edits,
    "NotebookEdit": _edits,
    "apply_patch": _patch,
    "Read": _read,
    "Glob": _glob,
    "LS": _glob,
    "Grep": _grep,
    "WebFetch": _network,
    "WebSearch": _network,
}
MCP_PREFIX = "mcp__"


def outside_calls(tool_name: object, tool_input: object, project: Project) -> Mapped:
    """The acode calls ``tool_name`` with ``tool_input`` amounts to in ``project``."""
    if not isinstance(tool_name, str) or not tool_name or len(tool_name) > 200:
        return Mapped(rule="tool_exists", reason="The call names no tool acode knows.")
    if not isinstance(tool_input, dict):
        return Mapped(rule="schema", reason=f"The input of {tool_name[:200]} is not a JSON object.")
    if tool_name.startswith(MCP_PREFIX):
        return Mapped(calls=(Call(tool_name, dict(tool_input)),))
    mapper = _TOOLS.get(tool_name)
    if mapper is None:
        return Mapped(
            rule="tool_exists",
            reason=f"acode does not know the tool {tool_name[:200]!r}, so no role allows it.",
        )
    try:
        return Mapped(calls=tuple(mapper(project, tool_input)))
    except _Refused as exc:
        return Mapped(rule=exc.rule, reason=exc.reason)
