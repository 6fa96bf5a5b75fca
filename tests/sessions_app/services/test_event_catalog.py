"""Live events are a catalog: every kind published has an entry saying what it re-renders,
every publisher names a kind of the catalog, and every fragment an entry names is a
partial its page's template defines.

Publishers are found in the source (every module of the three packages), so a new
``publish_session_event(..., "new.kind")`` fails here even before any test exercises it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.template import TemplateDoesNotExist
from django.template.loader import get_template

from acode import live
from sessions_app.dashboard.session import SESSION_FRAGMENTS, fragments_for
from sessions_app.services.audit import publish_job_event, publish_session_event
from sessions_app.services.event_catalog import (
    EVENT_CATALOG,
    LIVE_PAGES,
    EventKind,
    rerenders,
)

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("acode", "audit", "roles", "sessions_app")
SERVICES = ROOT / "sessions_app" / "services"
CATALOG_MODULE = SERVICES / "event_catalog.py"
# Functions that publish a live event, and the position of their kind argument.
PUBLISHERS = {"publish_session_event": 1, "session_record": 1, "publish_run": 1, "run_record": 2}
JOB_PUBLISHERS = {"job_event": 1, "publish_job_event": 3}
SESSION = "7f1c0f8e-5a4e-4a55-9a51-2f0d3c1b9e10"


def _sources() -> Iterator[tuple[Path, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _kind_argument(call: ast.Call, position: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "kind":
            return keyword.value
    return call.args[position] if len(call.args) > position else None


def _calls(tree: ast.Module, names: dict[str, int]) -> Iterator[tuple[ast.Call, ast.expr | None]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in names:
                yield node, _kind_argument(node, names[name])


def _kind_problem(argument: ast.expr, enum: str, members: set[str]) -> str | None:
    """Why ``argument`` is not a kind of the enumeration ``enum`` (a member, a choice
    between members, or the ``kind`` parameter passed on), or None."""
    if isinstance(argument, ast.IfExp):
        return _kind_problem(argument.body, enum, members) or _kind_problem(
            argument.orelse, enum, members
        )
    if isinstance(argument, ast.Name) and argument.id == "kind":
        return None
    if (
        isinstance(argument, ast.Attribute)
        and isinstance(argument.value, ast.Name)
        and argument.value.id == enum
    ):
        return None if argument.attr in members else f"{enum}.{argument.attr} is not a kind"
    return f"{ast.unparse(argument)} instead of a member of {enum}"


def _publisher_problems(names: dict[str, int], enum: str, members: set[str]) -> list[str]:
    problems = []
    for path, tree in _sources():
        for call, argument in _calls(tree, names):
            where = f"{path.relative_to(ROOT)}:{call.lineno}"
            if argument is None:
                continue  # publish_run's default kind, RUN_UPDATED
            if problem := _kind_problem(argument, enum, members):
                problems.append(f"{where}: {problem}")
    return problems


def test_every_kind_has_an_entry() -> None:
    assert set(EVENT_CATALOG) == set(EventKind)


def test_every_publisher_names_a_kind_of_the_catalog() -> None:
    members = {kind.name for kind in EventKind}
    assert _publisher_problems(PUBLISHERS, "EventKind", members) == []


def test_every_job_event_names_a_job_event_kind() -> None:
    from sessions_app.models import JobEventKind

    members = {kind.name for kind in JobEventKind}
    assert _publisher_problems(JOB_PUBLISHERS, "JobEventKind", members) == []


def test_the_source_scan_finds_the_publishers() -> None:
    """The scan above sees the services that publish (it would pass on an empty tree)."""
    files = {
        path.relative_to(ROOT).as_posix()
        for path, tree in _sources()
        if any(True for _ in _calls(tree, PUBLISHERS))
    }
    assert {
        "sessions_app/services/sessions.py",
        "sessions_app/services/plans.py",
        "sessions_app/services/changes.py",
        "sessions_app/services/transitions.py",
        "sessions_app/services/deliveries.py",
        "sessions_app/services/runs/engine.py",
    } <= files


def test_every_kind_is_published_somewhere() -> None:
    """An entry no service publishes is a page waiting for an event that never comes."""
    used: set[str] = set()
    for path, tree in _sources():
        if SERVICES not in path.parents or path == CATALOG_MODULE:
            continue
        used |= {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "EventKind"
        }
    # publish_run's default kind is the one that is named only as a default. roles.changed
    # is published by acode.live (the roles app, below this one, schedules it), by that name.
    assert live.ROLES_CHANGED == EventKind.ROLES_CHANGED
    used.add(EventKind.ROLES_CHANGED.name)
    assert {kind.name for kind in EventKind} <= used


@pytest.mark.parametrize("page", LIVE_PAGES, ids=lambda page: page.template)
def test_every_fragment_an_entry_names_is_a_partial_of_its_page(page: Any) -> None:
    named = set(page.fragments)
    for entry in EVENT_CATALOG.values():
        named |= set(entry.on(page))
    missing = []
    for name in sorted(named):
        try:
            get_template(f"{page.template}#{name}")
        except TemplateDoesNotExist:
            missing.append(name)
    assert missing == []


def test_the_session_page_re_renders_what_the_catalog_says() -> None:
    for kind, entry in EVENT_CATALOG.items():
        assert fragments_for(kind) == entry.session_page
    assert fragments_for(EventKind.PLAN_UPDATED) == ("plan", "transitions")
    # A kind from a newer process is not known here: everything is re-rendered.
    assert fragments_for("something.new") == SESSION_FRAGMENTS
    assert rerenders("something.new") == EVENT_CATALOG[EventKind.ROLES_CHANGED]


@pytest.fixture
def sent_messages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(live, "send", out.extend)
    return out


def test_a_kind_the_catalog_lacks_is_never_published(sent_messages: list[Any]) -> None:
    with pytest.raises(ValueError, match=r"made\.up"):
        publish_session_event(SESSION, "made.up")
    assert sent_messages == []


def test_the_wire_carries_the_kind_as_plain_text(sent_messages: list[Any]) -> None:
    publish_session_event(SESSION, EventKind.RUN_STARTED)
    publish_job_event(SESSION, SESSION, 3, "status", {"status": "running"})
    kinds = [(message["type"], message["kind"]) for _, message in sent_messages]
    assert kinds == [
        ("session.event", "run.started"),
        ("session.event", "run.started"),
        ("job.event", "status"),
        ("session.event", "job.status"),
    ]
    assert all(type(message["kind"]) is str for _, message in sent_messages)
