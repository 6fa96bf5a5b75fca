"""The catalog of live events: every kind the services publish, and what each re-renders.

A publisher names its kind from :class:`EventKind` (the string is the wire format: the
dashboard's websockets and the tests read it); every live page finds the fragments an
event changes in :data:`EVENT_CATALOG`, so a kind cannot be published without saying what
it re-renders. A fragment is a named partial of its page's template
(django-template-partials); ``tests/sessions_app/services/test_event_catalog.py`` checks
that every kind has an entry, that every publisher names one, and that every fragment an
entry names is a partial its template defines.

Pure data: services publish the kinds, ``sessions_app.dashboard`` and the consumers read
the fragments, and neither imports the other for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class EventKind(StrEnum):
    """The kind of a live event, as it goes over the wire."""

    SESSION_CREATED = "session.created"
    SESSION_UPDATED = "session.updated"
    # Archived or restored: what every panel offers changes (an archived one is read-only).
    SESSION_ARCHIVED = "session.archived"
    ROLE_CHANGED = "role.changed"
    PLAN_UPDATED = "plan.updated"
    CHANGES_UPDATED = "changes.updated"
    CHANGES_COMMITTED = "changes.committed"
    COMMIT_PUSHED = "commit.pushed"
    RUN_STARTED = "run.started"
    RUN_UPDATED = "run.updated"
    RUN_FINISHED = "run.finished"
    # A job's status, as the board hears it (the session's group hears every job event).
    JOB_STATUS = "job.status"
    # Any job event (the message's type; its own kind is the job event's ``JobEventKind``).
    JOB_EVENT = "job.event"
    # Role data changed (a role, tool, permission, rule or prompt): every page showing roles.
    ROLES_CHANGED = "roles.changed"
    # An outside agent's hook event (Claude Code, Codex): its call decided, its outcome.
    OUTSIDE_EVENT = "outside.event"


@dataclass(frozen=True)
class LivePage:
    """A page kept live over a websocket: its template and every fragment it pushes, in
    page order (what a connect or a resync sends)."""

    template: str
    fragments: tuple[str, ...]


SESSION_PAGE = LivePage(
    "dashboard/session.html",
    ("header", "transitions", "run", "delivered", "timeline", "plan", "changes", "jobs", "time"),
)
BOARD_PAGE = LivePage("dashboard/board.html", ("columns", "role-filter", "model-notice"))
ROLES_PAGE = LivePage("dashboard/roles.html", ("role-cards", "tool-matrix", "transition-rules"))
LIVE_PAGES = (SESSION_PAGE, BOARD_PAGE, ROLES_PAGE)


@dataclass(frozen=True)
class Rerenders:
    """The fragments one kind of event re-renders on each live page (none: the page does
    not listen for it)."""

    session_page: tuple[str, ...] = ()
    board: tuple[str, ...] = ()
    roles_page: tuple[str, ...] = ()

    def on(self, page: LivePage) -> tuple[str, ...]:
        if page is SESSION_PAGE:
            return self.session_page
        return self.board if page is BOARD_PAGE else self.roles_page


# The board re-renders the columns the session left and entered, this partial for each.
BOARD_COLUMN = "column"
_COLUMNS = (BOARD_COLUMN,)
# A run moving on also changes whether the role may be changed by hand, the risk tier the
# header shows (signals may raise it) and whether the session waits for a person.
_RUN = ("header", "transitions", "run", "time")
# Everything every page shows: what a kind the catalog does not know (a newer process's)
# re-renders. Correct first, then cheap.
EVERYTHING = Rerenders(SESSION_PAGE.fragments, BOARD_PAGE.fragments, ROLES_PAGE.fragments)

EVENT_CATALOG: Mapping[EventKind, Rerenders] = {
    EventKind.SESSION_CREATED: Rerenders(("header",), _COLUMNS),
    EventKind.SESSION_UPDATED: Rerenders(("header",), _COLUMNS),
    EventKind.SESSION_ARCHIVED: Rerenders(SESSION_PAGE.fragments, _COLUMNS),
    EventKind.ROLE_CHANGED: Rerenders(("header", "transitions", "timeline", "time"), _COLUMNS),
    EventKind.PLAN_UPDATED: Rerenders(("plan", "transitions"), _COLUMNS),
    EventKind.CHANGES_UPDATED: Rerenders(("changes", "transitions"), _COLUMNS),
    # Approved changes became a commit: it shows under Delivered.
    EventKind.CHANGES_COMMITTED: Rerenders(("changes", "transitions", "delivered"), _COLUMNS),
    EventKind.COMMIT_PUSHED: Rerenders(("run", "delivered"), _COLUMNS),
    EventKind.RUN_STARTED: Rerenders(_RUN, _COLUMNS),
    EventKind.RUN_UPDATED: Rerenders(_RUN, _COLUMNS),
    EventKind.RUN_FINISHED: Rerenders(_RUN, _COLUMNS),
    # Sent to the board's group only; the session page hears job events as JOB_EVENT.
    EventKind.JOB_STATUS: Rerenders(board=_COLUMNS),
    # The run panel too: its counters (LLM calls, tokens) and what its stage waits on.
    EventKind.JOB_EVENT: Rerenders(session_page=("jobs", "run")),
    # Its calls held for a person are in the jobs panel (as a job's questions are).
    EventKind.OUTSIDE_EVENT: Rerenders(("header", "timeline", "jobs"), _COLUMNS),
    # Whatever a page shows of roles may have changed: each page is sent everything again.
    EventKind.ROLES_CHANGED: EVERYTHING,
}


def rerenders(kind: str) -> Rerenders:
    """What an event of ``kind`` re-renders; everything for a kind the catalog lacks."""
    try:
        return EVENT_CATALOG[EventKind(kind)]
    except (ValueError, KeyError):
        return EVERYTHING


def catalogued(kind: str) -> EventKind:
    """``kind`` as a catalogued kind; ValueError if the catalog has no entry for it."""
    event_kind = EventKind(kind)
    if event_kind not in EVENT_CATALOG:
        raise ValueError(f"live event kind {kind!r} has no entry in EVENT_CATALOG")
    return event_kind
