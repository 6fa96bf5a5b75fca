"""What a tool decision depends on besides the role and the call: the host's sandbox.

A command may run only inside the sandbox, and one that may write only on its
copy-on-write layer; whether this host can start either is an input to the decision. The
facts are one frozen snapshot (``HostFacts``), built where they are known: the executor
takes it from the live probe, an example from what it states, a replay from what the
decision recorded. A decision reads them only for a command, so a caller may hand over how
to take the snapshot instead (``HostSource``): the live probe then runs, a recorder keeps
what it saw, and a replay says what was not recorded, only when a command is decided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

SANDBOX_UNAVAILABLE = "ACODE-TOL-003"
LAYER_UNAVAILABLE = "ACODE-TOL-004"


@dataclass(frozen=True)
class HostFacts:
    """What the host can do for commands: a snapshot (the defaults: a host that can)."""

    sandbox_required: bool = True  # False only when switched off (``ACODE_SANDBOX=off``)
    sandbox_available: bool = True
    sandbox_reason: str = ""  # why the sandbox cannot start ("" when it can)
    overlay: bool = True  # whether the copy-on-write layer can be mounted
    overlay_reason: str = ""


HostSource = HostFacts | Callable[[], HostFacts]


def host_facts(source: HostSource) -> HostFacts:
    """The snapshot ``source`` is, or takes when asked."""
    return source if isinstance(source, HostFacts) else source()


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
