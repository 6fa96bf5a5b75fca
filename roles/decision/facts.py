"""What a tool decision depends on besides the role and the call: the host's sandbox.

A command may run only inside the sandbox, and one that may write only on its
copy-on-write layer; whether this host can start either is an input to the decision, so
the executor passes what the host can do now (a live probe) and an example or a replay
passes what it states or recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

SANDBOX_UNAVAILABLE = "ACODE-TOL-003"
LAYER_UNAVAILABLE = "ACODE-TOL-004"


class HostFacts(Protocol):
    """What the host can do for commands (read only when a command is decided)."""

    @property
    def sandbox_required(self) -> bool:
        """False only when the sandbox is switched off (``ACODE_SANDBOX=off``)."""
        ...

    @property
    def sandbox_available(self) -> bool: ...

    @property
    def sandbox_reason(self) -> str:
        """Why the sandbox cannot start ("" when it can)."""
        ...

    @property
    def overlay(self) -> bool:
        """Whether the copy-on-write layer can be mounted."""
        ...

    @property
    def overlay_reason(self) -> str: ...


@dataclass(frozen=True)
class KnownHost:
    """A host described by its facts (an example's context, a recorded decision)."""

    sandbox_required: bool = True
    sandbox_available: bool = True
    sandbox_reason: str = ""
    overlay: bool = True
    overlay_reason: str = ""


def sandbox_problem(host: HostFacts, *, writable: bool = False) -> tuple[str, str, str]:
    """Why a command cannot run on ``host``, as (code, rule, reason); ("", "", "") when it
    can. Commands need the sandbox; write-capable ones also need its copy-on-write layer."""
    if not host.sandbox_required:
        return "", "", ""
    if not host.sandbox_available:
        reason = (
            f"Commands run only inside a sandbox, and none can start here: {host.sandbox_reason}."
        )
        return SANDBOX_UNAVAILABLE, "sandbox", reason
    if writable and not host.overlay:
        reason = (
            "Commands that may write run only on a copy-on-write layer, and none can be "
            f"mounted here: {host.overlay_reason}."
        )
        return LAYER_UNAVAILABLE, "layer", reason
    return "", "", ""
