"""A plan's steps are checked against one JSON Schema, whoever sets them (API, agent, run
engine): a refusal names the step, the field, what it must be and what it got."""

from __future__ import annotations

from typing import Any

import pytest

from acode.errors import AcodeError
from sessions_app.models import AgentSession
from sessions_app.services.plans import plan_set
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user: Any) -> AgentSession:
    return session_create(owner=user, title="Plans")


def refused(session: AgentSession, steps: list[Any]) -> AcodeError:
    with pytest.raises(AcodeError) as error:
        plan_set(session=session, steps=steps, actor="test")
    assert error.value.code == "ACODE-SES-004"
    session.refresh_from_db()
    assert session.plan == []  # nothing of a refused plan is kept
    return error.value


def test_steps_given_as_titles_or_objects_are_kept_in_order(session: AgentSession) -> None:
    plan = plan_set(
        session=session,
        steps=["  Write the parser ", {"title": "Test it", "files": ["t.py"], "depends_on": [1]}],
        actor="test",
    ).plan
    assert [(s["number"], s["title"], s["files"], s["depends_on"]) for s in plan] == [
        (1, "Write the parser", [], []),
        (2, "Test it", ["t.py"], [1]),
    ]
    assert {s["status"] for s in plan} == {"pending"}


@pytest.mark.parametrize(
    ("steps", "message", "field"),
    [
        (["ok", "\u200b"], "Plan step 2 needs title as non-blank text of at most 300", "title"),
        ([{"detail": "no title"}], "Plan step 1 needs title as non-blank text", "title"),
        (["t" * 301], "needs title as non-blank text of at most 300 characters", "title"),
        ([{"title": "t", "status": "nearly"}], "needs status as one of pending,", "status"),
        ([{"title": "t", "files": "a.py"}], "needs files as a list of at most 100 file", "files"),
        (
            [{"title": "t", "depends_on": [True]}],
            "needs depends_on as a list of at most",
            "depends_on",
        ),
        ([{"title": "t\ud800"}], "Plan step 1 needs title as", "title"),
    ],
)
def test_a_bad_step_is_refused_naming_its_field(
    session: AgentSession, steps: list[Any], message: str, field: str
) -> None:
    error = refused(session, steps)
    assert message in error.message
    assert error.details["field"] == field


def test_the_refusal_says_what_it_got_and_where(session: AgentSession) -> None:
    error = refused(session, [{"title": "t", "files": ["ok.py", "x" * 1001]}])
    assert error.details == {"step": 1, "field": "files", "location": "files/1"}
    assert "(got 'xxxx" in error.message and error.message.endswith("...).")
    status = refused(session, [{"title": "t", "status": "nearly"}])
    assert "(got 'nearly')" in status.message
    assert "done" in status.details["allowed"]


def test_a_step_that_is_neither_object_nor_title_is_refused(session: AgentSession) -> None:
    assert refused(session, ["ok", 5]).message == "Plan step 2 must be an object or a title."


def test_a_plan_has_at_most_200_steps(session: AgentSession) -> None:
    assert refused(session, ["s"] * 201).message == "A plan has at most 200 steps."
