"""What a tool decision read besides the role, recorded so that it can be replayed.

The executor wraps the live facts it hands ``decide`` in recorders (``RecordingHost``,
``RecordingWorkspace``); after the decision, ``replay_record`` turns what they saw and the
call's exact arguments into the ``replay`` entry of the decision's audit row. A replay reads
that entry back (``RecordedHost``, ``RecordedWorkspace``): a fact the recorded decision did
not consult raises ``NotRecorded`` rather than being guessed. One module writes and reads
the format, so the two cannot drift.

A decision reads only the facts its path through the rules needs, but a replay under
another version of the role may take another path (a command a rule refused may be
allowed by the draft, which then asks for the sandbox). So ``replay_record`` first reads,
through the recorders, every fact a decision of this call could read under any role:
the host's sandbox for a tool that runs commands, and for every string in the arguments
that could be a workspace path (an argv token, an option's attached value, a pytest node
id's file) whether it goes through a link. The entry: ``arguments`` (the exact call arguments) or ``unrecorded`` (why not: too large,
or something the audit would have redacted, which is never stored), ``host`` (the sandbox
facts, when the decision consulted any) and ``links`` (each workspace query as
``[parts, answer]``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roles.commands.workspace import WorkspaceFacts
from roles.decision.arguments import MAX_PATH_BYTES
from roles.decision.facts import HostFacts, HostSource, host_facts
from roles.tools import declared_tools

MAX_RECORDED_ARGUMENTS = 64 * 1024
MAX_RECORDED_PATHS = 256  # link queries read ahead for one call (each a few lstat calls)
HOST_FIELDS = tuple(f.name for f in dataclasses.fields(HostFacts))


class NotRecorded(Exception):
    """A replayed decision asked for a fact its recorded decision did not consult."""

    def __init__(self, fact: str, detail: str = "") -> None:
        super().__init__(detail or fact)
        self.fact = fact  # the kind of fact (reports count them per kind)
        self.detail = detail or fact  # which one


@dataclass
class RecordingHost:
    """The live host's facts, taken once when the decision first asks, and kept."""

    live: HostSource
    seen: HostFacts | None = None

    def __call__(self) -> HostFacts:
        if self.seen is None:
            self.seen = host_facts(self.live)
        return self.seen


@dataclass
class RecordingWorkspace:
    """The live workspace; every query and its answer are kept."""

    live: WorkspaceFacts
    seen: list[list[Any]] = field(default_factory=list)

    def link_on_path(self, parts: Sequence[str]) -> str | None:
        answer = self.live.link_on_path(parts)
        self.seen.append([list(parts), answer])
        return answer


def replay_record(
    arguments: Any,
    host: RecordingHost,
    workspace: RecordingWorkspace,
    *,
    redact: Callable[[str], str],
    tool: str = "",
) -> dict[str, Any]:
    """The ``replay`` entry of a decision's audit row. ``redact`` is the audit's own
    redaction: arguments it would change are not stored (only why). ``tool``: the call's
    tool, whose every possible fact is read first (see the module)."""
    entry: dict[str, Any] = {}
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = None
    if text is None:
        entry["unrecorded"] = "the arguments are not plain JSON"
    elif len(text.encode("utf-8", "surrogatepass")) > MAX_RECORDED_ARGUMENTS:
        entry["unrecorded"] = f"the arguments are larger than {MAX_RECORDED_ARGUMENTS} bytes"
    elif "\x00" in text or _has_surrogate(text):
        entry["unrecorded"] = "the arguments hold NUL or a lone surrogate, which is not stored"
    elif redact(text) != text:
        entry["unrecorded"] = "the arguments hold something redacted (a secret is never stored)"
    else:
        entry["arguments"] = arguments
        facts_read_ahead(tool, arguments, host, workspace)
    if host.seen is not None:
        entry["host"] = dataclasses.asdict(host.seen)
    if workspace.seen:
        entry["links"] = list(workspace.seen)
    return entry


def facts_read_ahead(
    tool: str, arguments: Any, host: RecordingHost, workspace: RecordingWorkspace
) -> None:
    """Read (and so record) every fact a decision of this call could read under any role:
    the sandbox for a built-in command tool, the link answer for every possible path."""
    declaration = declared_tools().get(tool)
    if declaration is not None and declaration.command:
        host()  # takes (and so records) the host facts
    for parts in possible_paths(arguments):
        workspace.link_on_path(parts)


def possible_paths(arguments: Any) -> list[list[str]]:
    """The components of every string in ``arguments`` that a rule could read as a
    workspace path (lexically possible: relative, no ``..``, not in ``.git``), with what
    command rules read out of argv tokens (``--opt=VALUE``, ``-kVALUE``, ``file::test``);
    the first ``MAX_RECORDED_PATHS``, longest paths answer their prefixes."""
    found: dict[tuple[str, ...], None] = {}
    for text in _strings(arguments):
        values = [text, text.split("::", 1)[0]]
        if text.startswith("--") and "=" in text:
            values.append(text.split("=", 1)[1])
        elif text.startswith("-") and len(text) > 2:
            values.append(text[2:])
        for value in values:
            parts = _lexical_parts(value)
            if parts:
                found.setdefault(tuple(parts))
            if len(found) >= MAX_RECORDED_PATHS:
                return [list(p) for p in found]
    return [list(p) for p in found]


def _strings(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        yield value
    elif depth < 20 and isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < 20 and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def _lexical_parts(value: str) -> list[str]:
    if not value or len(value) > MAX_PATH_BYTES or "\0" in value or value.startswith(("/", "~")):
        return []
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts or any(p.lower() == ".git" for p in parts):
        return []
    return parts


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@dataclass(frozen=True)
class RecordedHost:
    """The host facts a decision recorded; asking for them when they were not raises."""

    facts: Mapping[str, Any] | None

    def __call__(self) -> HostFacts:
        missing = [f for f in HOST_FIELDS if self.facts is None or f not in self.facts]
        if missing:
            raise NotRecorded(f"the host's {missing[0].replace('_', ' ')}")
        assert self.facts is not None
        return HostFacts(
            sandbox_required=bool(self.facts["sandbox_required"]),
            sandbox_available=bool(self.facts["sandbox_available"]),
            sandbox_reason=str(self.facts["sandbox_reason"]),
            overlay=bool(self.facts["overlay"]),
            overlay_reason=str(self.facts["overlay_reason"]),
        )


@dataclass(frozen=True)
class RecordedWorkspace:
    """The workspace answers a decision recorded. A query answered for a longer path
    answers its prefixes too (no link before the first one found); any other raises."""

    answers: tuple[tuple[tuple[str, ...], str | None], ...] = ()

    @classmethod
    def of(cls, links: Sequence[Any] | None) -> RecordedWorkspace:
        out = []
        for item in links or ():
            parts, answer = item
            out.append((tuple(str(p) for p in parts), None if answer is None else str(answer)))
        return cls(tuple(out))

    def link_on_path(self, parts: Sequence[str]) -> str | None:
        wanted = tuple(parts)
        for recorded, answer in self.answers:
            depth = _depth(recorded, answer)
            if recorded[: len(wanted)] == wanted:  # the same path or a prefix of it
                return answer if depth is not None and depth <= len(wanted) else None
            if depth is not None and wanted[:depth] == recorded[:depth]:
                return answer  # a longer path through the same first link
        raise NotRecorded(
            "whether a path goes through a link in the workspace",
            f"whether {'/'.join(wanted)!r} goes through a link in the workspace",
        )


def _depth(parts: tuple[str, ...], answer: str | None) -> int | None:
    """How many leading parts make up the link ``answer`` (None when there is none)."""
    if answer is None:
        return None
    for index in range(1, len(parts) + 1):
        if "/".join(parts[:index]) == answer:
            return index
    return None
