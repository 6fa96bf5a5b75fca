"""A job that stopped at a limit is resumed with a fresh budget (seed 004): a new job in the
same role on the same request, whose model reads what the stopped one did, as untrusted
data through the one channel. Through the API, the CLI's endpoint and the dashboard."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from acode.llm.providers import ScriptedProvider
from roles.selectors import endpoint_for
from sessions_app.agent.loop import run_job
from sessions_app.models import Job, JobStatus
from sessions_app.services.jobs import job_create
from sessions_app.services.transitions import session_transition
from tests.sessions_app.jobkit import scripted_model, session_in

pytestmark = pytest.mark.django_db

LISTING = {"name": "list_directory", "arguments": {"path": "."}}
# The first job lists the same directory three times (a loop: it stops); the second
# answers.
SCRIPT = [
    [{"content": "Let me look around.", "tool_calls": [LISTING]}] + [{"tool_calls": [LISTING]}] * 2,
    [{"content": "1. Add a README\n2. Describe the layout"}],
]


def stopped_job(user: User) -> tuple[Job, ScriptedProvider]:
    endpoint = scripted_model("planner", SCRIPT)
    session = session_in("planner", user, plan=False)
    job = run_job(job_create(session=session, request="Survey the code", user=user).pk)
    assert (job.status, job.error_code) == (JobStatus.LIMIT_EXCEEDED, "ACODE-JOB-002")
    return job, ScriptedProvider(endpoint_for(endpoint.name))


def test_a_stopped_job_resumes_with_a_fresh_budget_and_what_it_did(
    user: User, api: APIClient
) -> None:
    stopped, provider = stopped_job(user)
    response = api.post(f"/api/jobs/{stopped.pk}/resume/")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["resumed_from"] == str(stopped.pk) and body["status"] == "queued"
    assert body["request"] == "Survey the code" and body["role"] == "planner"
    assert body["llm_calls"] == 0, "a fresh budget"

    done = run_job(body["id"], provider=provider)
    assert done.status == JobStatus.SUCCEEDED, done.error_message
    first = provider.requests[0]["messages"][1]["content"]
    assert "## Where an earlier attempt stopped" in first
    assert "list_directory was called three times with the same arguments" in first
    assert "It said: Let me look around." in first
    assert "It called list_directory" in first
    steps = first.split("## Where an earlier attempt stopped", 1)[1]
    assert "<untrusted-data" in steps, "what the stopped job saw is data, not instructions"
    shown = api.get(f"/api/jobs/{body['id']}/").json()
    assert shown["events"][0]["data"]["resumes"] == str(stopped.pk)


def test_only_a_job_stopped_at_a_limit_in_its_own_role_resumes(
    user: User, api: APIClient, django_user_model: Any
) -> None:
    stopped, _ = stopped_job(user)
    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user("eve", password="pw-e-123"))
    hidden = stranger.post(f"/api/jobs/{stopped.pk}/resume/")
    assert hidden.status_code == 404 and hidden.json()["code"] == "ACODE-API-404"

    session_transition(session=stopped.session, to_role="default", reason="Done", user=user)
    elsewhere = api.post(f"/api/jobs/{stopped.pk}/resume/")
    assert elsewhere.status_code == 409, elsewhere.content
    assert elsewhere.json()["code"] == "ACODE-JOB-013"
    assert "ran in role Planner and resumes there" in elsewhere.json()["message"]

    finished = job_create(session=stopped.session, request="Hello", user=user)
    Job.objects.filter(pk=finished.pk).update(status=JobStatus.SUCCEEDED)
    refused = api.post(f"/api/jobs/{finished.pk}/resume/")
    assert refused.status_code == 409 and refused.json()["code"] == "ACODE-JOB-013"
    assert "only a job stopped at a limit resumes" in refused.json()["message"]
    assert Job.objects.filter(resumed_from__isnull=False).count() == 0, "nothing was queued"


def test_the_dashboard_offers_resume_on_a_stopped_job(user: User) -> None:
    stopped, _ = stopped_job(user)
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/sessions/{stopped.session_id}/").content.decode()
    assert f'data-resume="{stopped.pk}"' in page
    done = browser.post(f"/jobs/{stopped.pk}/resume/", follow=True).content.decode()
    resumed = Job.objects.get(resumed_from=stopped)
    assert f"Job {str(resumed.pk)[:8]} resumes it with a fresh budget." in done
    assert f'data-resumed-from="{str(stopped.pk)[:8]}"' in done
