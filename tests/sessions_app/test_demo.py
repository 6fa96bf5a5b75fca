"""``make demo``'s set-up (issue 34): scripted endpoints answer for every run role, and a
medium run of the demo request reaches a commit with a patch; a high run stops at the
approval gate for the second demo user. The runs are driven in this process; the browser
test (tests/browser/test_demo.py) takes the same set-up through a real server and worker."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from roles.models import ModelEndpoint
from roles.registry import registry
from sessions_app.management import demo
from sessions_app.models import RunStatus
from sessions_app.services.runs import run_start
from tests.sessions_app.runkit import branch_log, drive

pytestmark = pytest.mark.django_db


@pytest.fixture
def fast_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts without their 3 s of thinking (the browser test keeps them)."""
    scripts = {
        role: [{**step, "delay": 0} for step in steps] for role, steps in demo.SCRIPTS.items()
    }
    monkeypatch.setattr(demo, "SCRIPTS", scripts)


def test_the_demo_registers_scripted_endpoints_for_every_run_role(fast_demo: None) -> None:
    world = demo.demo_setup()
    for role in demo.SCRIPTS:
        endpoint = ModelEndpoint.objects.get(name=f"demo-{role}")
        assert endpoint.kind == "scripted" and endpoint.model == ""
        assert registry.get(role).spec.preferred_model == endpoint.name
    assert set(world.passwords) == {"demo", "demo-approver"}
    again = demo.demo_setup()  # idempotent: the same endpoints, new passwords and sessions
    assert ModelEndpoint.objects.filter(name__startswith="demo-").count() == len(demo.SCRIPTS)
    assert again.passwords["demo"] != world.passwords["demo"]


def test_a_medium_demo_run_ends_in_a_commit_and_a_patch(fast_demo: None) -> None:
    world = demo.demo_setup()
    owner = world.medium.owner
    run = drive(run_start(session=world.medium, request=demo.REQUEST, user=owner, risk="medium"))
    assert run.status == RunStatus.SUCCEEDED, (run.error_code, run.message)
    assert any(demo.REQUEST[:30] in subject for subject in branch_log(run))
    api = APIClient()
    api.force_authenticate(owner)
    detail = api.get(f"/api/runs/{run.pk}/").json()
    commit = detail["commit"]
    assert commit is not None
    patch = api.get(f"/api/sessions/{world.medium.pk}/patch/", {"commit": commit["sha"]})
    assert patch.status_code == 200, patch.content
    assert b"greet.py" in patch.content and b"def greet(name" in patch.content
    test_stage = next(s for s in detail["stages"] if s["purpose"] == "test")
    assert "1 passed" in test_stage["evidence"]["output"]


def test_a_high_demo_run_waits_for_the_second_user(fast_demo: None) -> None:
    world = demo.demo_setup()
    run = drive(
        run_start(session=world.high, request=demo.REQUEST, user=world.high.owner, risk="high")
    )
    assert run.status == RunStatus.AWAITING_APPROVAL, (run.error_code, run.message)
    approver: Any = User.objects.get(username="demo-approver")
    assert approver.has_perm("sessions_app.approve_run")
    assert approver.has_perm("sessions_app.view_all_sessions")  # sees the demo's sessions
