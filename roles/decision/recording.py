"""What a tool decision read besides the role, recorded so that it can be replayed.

The executor wraps the live facts it hands ``decide`` in recorders (``RecordingHost``,
``RecordingWorkspace``); after the decision, ``replay_record`` turns what they saw and the
call's exact arguments into the ``replay`` entry of the decision's audit row. A replay reads
that entry back (``RecordedHost``, ``RecordedWorkspace``): a fact the recorded decision did
not consult raises ``NotRecorded`` rather than being guessed. One module writes and reads
the format, so the two cannot drift.

The entry: ``arguments`` (the exact call arguments) or ``unrecorded`` (why not: too large,
or something the audit would have redacted, which is never stored), ``host`` (the sandbox
facts, when the decision consulted any) and ``links`` (each workspace query as
``[parts, answer]``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roles.commands.workspace import WorkspaceFacts
from roles.decision.facts import HostFacts

MAX_RECORDED_ARGUMENTS = 64 * 1024
HOST_FIELDS = ("sandbox_required", "sandbox_available", "sandbox_reason", "overlay",
               "overlay_reason")  # fmt: skip


class NotRecorded(Exception):
    """A replayed decision asked for a fact its recorded decision did not consult."""

    def __init__(self, fact: str, detail: str = "") -> None:
        super().__init__(detail or fact)
        self.fact = fact  # the kind of fact (reports count them per kind)
        self.detail = detail or fact  # which one


class _HostFields:
    """The host facts ``decide`` reads (``HostFacts``), each from ``_get``."""

    def _get(self, name: str) -> Any:
        raise NotImplementedError

    @property
    def sandbox_required(self) -> bool:
        return bool(self._get("sandbox_required"))

    @property
    def sandbox_available(self) -> bool:
        return bool(self._get("sandbox_available"))

    @property
    def sandbox_reason(self) -> str:
        return str(self._get("sandbox_reason"))

    @property
    def overlay(self) -> bool:
        return bool(self._get("overlay"))

    @property
    def overlay_reason(self) -> str:
        return str(self._get("overlay_reason"))


@dataclass
class RecordingHost(_HostFields):
    """The live host; once the decision reads one fact, every fact is kept (one probe)."""

    live: HostFacts
    seen: dict[str, Any] | None = None

    def _get(self, name: str) -> Any:
        if self.seen is None:
            self.seen = {f: getattr(self.live, f) for f in HOST_FIELDS}
        return self.seen[name]


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
) -> dict[str, Any]:
    """The ``replay`` entry of a decision's audit row. ``redact`` is the audit's own
    redaction: arguments it would change are not stored (only why)."""
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
    if host.seen is not None:
        entry["host"] = dict(host.seen)
    if workspace.seen:
        entry["links"] = list(workspace.seen)
    return entry


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@dataclass(frozen=True)
class RecordedHost(_HostFields):
    """The host facts a decision recorded; reading one that was not recorded raises."""

    facts: Mapping[str, Any] | None

    def _get(self, name: str) -> Any:
        if self.facts is None or name not in self.facts:
            raise NotRecorded(f"the host's {name.replace('_', ' ')}")
        return self.facts[name]


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
