"""``make demo`` (issue 34): a request taken through a run to a commit and a patch in
minutes, with no model server: scripted model endpoints (labelled scripted wherever they
show) answer for each role, each answer a few seconds late so the waiting is visible.

:func:`demo_setup` (``manage.py acode_demo``; ``acode.demo`` runs it before the services
start) registers the endpoints, gives the run roles their models, and makes two users
(``demo``, who starts runs, and ``demo-approver``, who sees every session and may
approve runs) and two sessions:
one for a medium-risk run (plan, code, test, review, then a commit), one for a high-risk
run that stops at the approval gate for the second user. Running it again resets the
demo's endpoints, roles' models and passwords, and adds fresh sessions.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Permission, User
from django.db import transaction

from roles.services import role_write
from roles.services.endpoints import model_endpoint_save
from sessions_app.models import AgentSession
from sessions_app.services.sessions import session_create

REQUEST = "Add a greet(name) helper in greet.py, with a test"
PLAN = {
    "steps": [{"title": "Add greet(name) with its test", "files": ["greet.py", "test_greet.py"]}]
}
GREET = (
    'def greet(name: str) -> str:\n    """A greeting for name."""\n    return f"Hello, {name}!"\n'
)
TEST = 'from greet import greet\n\n\ndef test_greet() -> None:\n    assert greet("Ada") == "Hello, Ada!"\n'
# How long each scripted answer takes: long enough to see a stage wait on its model.
THINK_SECONDS = 3


def _step(
    content: str = "", *calls: tuple[str, dict[str, Any]], tokens: int = 400
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "delay": THINK_SECONDS,
        "usage": {"prompt_tokens": tokens, "completion_tokens": max(20, len(content) // 4)},
    }
    if content:
        step["content"] = content
    if calls:
        step["tool_calls"] = [{"name": name, "arguments": args} for name, args in calls]
    return step


# One script per role: every job of the role replays it (each run in a fresh session).
SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "planner": [_step(json.dumps(PLAN), tokens=900)],
    "explorer": [
        _step("", ("list_directory", {"path": "."})),
        _step("The workspace is empty: greet.py and test_greet.py are new files."),
    ],
    "coder": [
        _step("", ("create_file", {"path": "greet.py", "content": GREET}), tokens=1200),
        _step("", ("create_file", {"path": "test_greet.py", "content": TEST}), tokens=1400),
        _step("Created greet.py with greet(name) and test_greet.py with its test."),
    ],
    "tester": [
        _step("", ("run_tests", {"argv": ["python", "-m", "pytest", "-q", "test_greet.py"]})),
        _step("The test ran; its result is above."),
    ],
    "reviewer": [
        _step(
            "",
            (
                "submit_review",
                {"verdict": "approve", "summary": "greet(name) and its test look right"},
            ),
            tokens=1500,
        ),
        _step("verdict: approve"),
    ],
}
ENDPOINT_PREFIX = "demo-"
USERS = ("demo", "demo-approver")


@dataclass(frozen=True)
class DemoWorld:
    """What the demo set up: the logins (passwords new on every set-up) and sessions."""

    passwords: dict[str, str]
    medium: AgentSession
    high: AgentSession


def _user(username: str) -> tuple[User, str]:
    password = secrets.token_urlsafe(9)
    user = User.objects.filter(username=username).first() or User(username=username)
    user.email = f"{username}@localhost"
    user.set_password(password)
    user.save()
    return user, password


@transaction.atomic
def demo_setup() -> DemoWorld:
    """Scripted endpoints for the run roles, the two users, and a session for each run."""
    for role, script in SCRIPTS.items():
        name = f"{ENDPOINT_PREFIX}{role}"
        model_endpoint_save(name=name, data={"kind": "scripted", "script": script}, actor="demo")
        role_write(data={"preferred_model": name, "fallback_model": ""}, create=False,
                   slug=role, actor="demo")  # fmt: skip
    demo, demo_password = _user("demo")
    approver, approver_password = _user("demo-approver")
    # An approver approves what they see: the demo user's sessions too.
    approver.user_permissions.add(
        *Permission.objects.filter(codename__in=("approve_run", "view_all_sessions"))
    )
    medium = session_create(owner=demo, title="Demo: a medium-risk run to a commit", task=REQUEST)
    high = session_create(
        owner=demo, title="Demo: a high-risk run and the approval gate", task=REQUEST
    )
    return DemoWorld({"demo": demo_password, "demo-approver": approver_password}, medium, high)


def demo_guide(world: DemoWorld, url: str) -> list[str]:
    """What to do next, as the banner says it."""
    return [
        "Demo: every model answer is scripted (endpoints demo-*, kind scripted; README,",
        "  Scripted model endpoints), each about 3 s late so you can watch a stage wait.",
        f"1. Log in as 'demo' with password: {world.passwords['demo']}",
        f"2. Open {url}sessions/{world.medium.pk}/ and press Run (risk: medium): plan, code,",
        "   test and review, then a commit on the session branch; the run panel links the patch.",
        f"3. Open {url}sessions/{world.high.pk}/ and Run it with risk high: it stops at the",
        "   approval gate. Log in as 'demo-approver' with password: "
        f"{world.passwords['demo-approver']}",
        "   and approve it (whoever started a run never approves it).",
        f"Usage totals of what ran: {url}usage/",
    ]
