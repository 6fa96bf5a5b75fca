"""What every dashboard page shows the same way: role badges, moments, durations, plan progress."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from roles.registry import RoleDef, registry
from sessions_app.models import StepStatus

UNKNOWN_ROLE_COLOUR = "#94a3b8"
DARK_INK = "#111827"
LIGHT_INK = "#ffffff"


@dataclass(frozen=True)
class RoleBadge:
    """A role as a coloured badge: name, colour and a readable text colour on it."""

    slug: str
    name: str
    colour: str
    ink: str


def ink_for(colour: str) -> str:
    """Dark or white text, whichever reads better on ``colour`` (WCAG relative luminance)."""
    try:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    except ValueError:
        return LIGHT_INK
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return DARK_INK if luminance > 0.4 else LIGHT_INK


def badge_of(role: RoleDef) -> RoleBadge:
    return RoleBadge(role.slug, role.name, role.spec.colour, ink_for(role.spec.colour))


def role_badge(slug: str) -> RoleBadge:
    """The badge of a stored role slug; an unknown slug (deleted role) gets a grey badge."""
    try:
        return badge_of(registry.get(slug))
    except Exception:  # an audit row may name a role that no longer exists
        return RoleBadge(slug, slug or "—", UNKNOWN_ROLE_COLOUR, DARK_INK)


def role_permissions(slug: str) -> list[str]:
    """A stored role's effective permissions, sorted ([] for a role that no longer exists)."""
    try:
        return sorted(registry.get(slug).access.permissions)
    except Exception:  # an audit row may name a role that no longer exists
        return []


def all_role_badges() -> list[RoleBadge]:
    """Every role, in the registry's order (for role filters and table headers)."""
    return [badge_of(role) for role in registry.list_roles()]


def duration_text(seconds: float) -> str:
    """A short human duration: ``45s``, ``12m``, ``3h 04m``, ``2d 5h``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, _ = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


@dataclass(frozen=True)
class Stamp:
    """A moment, formatted for the page: machine-readable, full and short."""

    iso: str
    full: str
    short: str


def stamp_of(moment: datetime) -> Stamp:
    local = timezone.localtime(moment)
    return Stamp(
        local.isoformat(),
        f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}".strip(),
        f"{local:%b} {local.day}, {local:%H:%M}",
    )


def plan_progress(plan: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(steps finished, steps) of a session's plan; a skipped step counts as finished."""
    done = sum(1 for s in plan if s.get("status") in (StepStatus.DONE, StepStatus.SKIPPED))
    return done, len(plan)


def precise_duration_text(seconds: float) -> str:
    """A duration to the second under an hour (``45s``, ``2m 05s``), as a wait ticks."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return duration_text(seconds)


@dataclass(frozen=True)
class WaitingView:
    """What an unfinished job waits on, shown live: the counter ticks in the browser from
    ``since`` (``acode.js``), the calls move with each job event the page is pushed."""

    what: str  # model, tool, worker, broker, step
    label: str
    since: Stamp
    waited: str
    llm_calls: int
    tool_calls: int


def waiting_view(in_flight: Any) -> WaitingView | None:
    """A ``selectors.jobs.InFlight`` as the pages show it (None: nothing in flight)."""
    if in_flight is None:
        return None
    waited = (timezone.now() - in_flight.since).total_seconds()
    return WaitingView(
        what=in_flight.what,
        label=in_flight.label,
        since=stamp_of(in_flight.since),
        waited=precise_duration_text(waited),
        llm_calls=in_flight.llm_calls,
        tool_calls=in_flight.tool_calls,
    )
