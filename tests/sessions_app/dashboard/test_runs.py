"""Runs on the dashboard: the New session form on the board, the Run form, the run panel
(pipeline, stages, verdicts, evidence, risk, budget), its buttons for who may press them,
the refusals they show, and the run on the board's cards."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import Client

from acode.routing import websocket_urlpatterns
from sessions_app.models import (
    AgentSession,
    ApprovalStatus,
    DeliveredCommit,
    Job,
    PushStatus,
    Run,
    RunStatus,
    WorkflowTemplate,
)
from sessions_app.services.audit import session_group
from sessions_app.services.jobs import job_start
from sessions_app.services.runs import run_start
from sessions_app.services.sessions import session_create
from tests.sessions_app import runkit
from tests.sessions_app.jobkit import allow_attach, scripted_model, server_write
from tests.sessions_app.runkit import (
    FIRST,
    PLAN_ONE_STEP,
    calls,
    drive,
    grant_approve,
    review,
    script_medium_run,
)

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
REVISE = review(
    "request_changes",
    "greet must take a name",
    {"path": "greet.py", "line": 1, "body": "greet() needs a name parameter"},
)
APPROVE = review("approve", "looks right")


def panel(html: str) -> str:
    """The run panel of a page or of a POST's answer."""
    start = html.index('<section id="run-panel"')
    return html[start : html.index("</section>", start)]


def actions(html: str) -> set[str]:
    return set(re.findall(r'data-action="([^"]+)"', panel(html)))


def page(client: Client, session: AgentSession) -> str:
    response = client.get(f"/sessions/{session.id}/")
    assert response.status_code == 200
    return response.content.decode()


def script_question() -> None:
    """A low run whose Coder asks a person first, then does the work after the answer."""
    scripted_model(
        "coder",
        [
            calls(("ask_human", {"question": "Which greeting language?"}), final="asked"),
            calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok"),
        ],
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [APPROVE])


def high_run_at_gate(session: AgentSession, starter: User) -> Run:
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model("explorer", [[{"content": "greet.py does not exist yet."}]])
    scripted_model(
        "coder", [calls(("create_file", {"path": "greet.py", "content": FIRST}), final="ok")]
    )
    scripted_model("tester", [runkit.script_tester()])
    scripted_model("reviewer", [APPROVE])
    run = drive(run_start(session=session, request="Add a greeting", user=starter, risk="high"))
    assert run.status == RunStatus.AWAITING_APPROVAL, run.message
    return run


# -- the New session form ----------------------------------------------------------------


def test_board_form_opens_a_session_and_goes_to_its_page(dev_client: Client, user: User) -> None:
    html = dev_client.get("/").content.decode()
    form = html.split('class="panel new-session-form"')[1].split("</form>")[0]
    assert 'name="title"' in form and 'name="task"' in form and 'name="repository"' in form
    assert 'name="csrfmiddlewaretoken"' in form
    assert 'name="workspace"' not in form  # attaching a directory needs a permission
    response = dev_client.post("/sessions/new/", {"title": "  Add a cache  ", "task": "LRU"})
    assert response.status_code == 302
    session = AgentSession.objects.get(title="Add a cache")
    assert response["Location"] == f"/sessions/{session.id}/"
    assert session.owner == user and session.task == "LRU" and session.workspace_managed
    assert "Add a cache" in page(dev_client, session)


def test_board_form_shows_refusals_with_their_codes_and_keeps_what_was_typed(
    dev_client: Client,
) -> None:
    blank = dev_client.post("/sessions/new/", {"title": "\u200b ", "task": "keep me"})
    assert blank.status_code == 400
    html = blank.content.decode()
    assert 'data-code="ACODE-API-400"' in html and "A session needs a title." in html
    assert '<details class="new-session" open>' in html
    assert ">keep me</textarea>" in html
    unknown = dev_client.post("/sessions/new/", {"title": "x", "repository": "secret-repo"})
    assert unknown.status_code == 400
    assert 'data-code="ACODE-SES-005"' in unknown.content.decode()
    attach = dev_client.post("/sessions/new/", {"title": "x", "workspace": "/etc"})
    assert 'data-code="ACODE-SES-002"' in attach.content.decode()
    both = dev_client.post("/sessions/new/", {"title": "x", "repository": "r", "workspace": "/w"})
    assert "not both" in both.content.decode()
    assert not AgentSession.objects.exists()


def test_board_form_attaches_a_directory_for_users_allowed_to(
    dev_client: Client, user: User, tmp_path: Path
) -> None:
    allow_attach(user)
    assert 'name="workspace"' in dev_client.get("/").content.decode()
    response = dev_client.post("/sessions/new/", {"title": "Attached", "workspace": str(tmp_path)})
    assert response.status_code == 302
    session = AgentSession.objects.get(title="Attached")
    assert session.workspace == str(tmp_path.resolve()) and not session.workspace_managed


# -- starting a run ----------------------------------------------------------------------


def test_the_run_form_is_offered_to_who_may_act(
    dev_client: Client, session: AgentSession, django_user_model: Any
) -> None:
    html = page(dev_client, session)
    assert 'data-status="none"' in panel(html)
    assert actions(html) == {"start"}
    assert 'name="request"' in panel(html)
    assert '<option value="low" selected>' in panel(html)
    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-1")
    viewer.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    follower = Client()
    follower.force_login(viewer)
    assert actions(page(follower, session)) == set()


def test_starting_a_run_from_the_form_creates_it_and_shows_it(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    runkit.other_reviewer()
    response = dev_client.post(
        f"/sessions/{session.id}/runs/",
        {"request": "Add a greeting helper", "risk": "medium"},
        **HX,
    )
    assert response.status_code == 200
    run = Run.objects.get(session=session)
    assert run.declared_tier == "medium" and run.started_by == user
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="run-panel"')
    assert 'data-status="running"' in html
    assert "Add a greeting helper" in html
    # The medium template as a pipeline, the planner stage current, its job linked.
    assert re.findall(r'class="pipeline-node[^"]*" data-purpose="(\w+)"', html) == [
        "plan",
        "code",
        "test",
        "review",
    ]
    assert 'data-purpose="plan" data-state="current"' in html
    job = Job.objects.get(session=session)
    assert f"/sessions/{session.id}/jobs/{job.id}/" in html
    assert "Planning the request (medium risk)" in html
    assert actions(html) == {"cancel"}  # no second run while this one executes
    # The role change form says the run owns the role.
    assert "A run is executing" in page(dev_client, session)


def test_a_refused_start_is_shown_in_the_form(dev_client: Client, session: AgentSession) -> None:
    blank = dev_client.post(f"/sessions/{session.id}/runs/", {"request": "  "}, **HX)
    assert 'data-code="ACODE-API-400"' in blank.content.decode()
    bad_risk = dev_client.post(
        f"/sessions/{session.id}/runs/", {"request": "x", "risk": "extreme"}, **HX
    )
    assert "Unknown risk tier" in bad_risk.content.decode()
    assert not Run.objects.exists()
    dev_client.post(f"/sessions/{session.id}/runs/", {"request": "First"}, **HX)
    second = dev_client.post(f"/sessions/{session.id}/runs/", {"request": "Second"}, **HX)
    html = second.content.decode()
    assert 'data-code="ACODE-RUN-002"' in html and "one run at a time" in html
    assert Run.objects.count() == 1
    # Without htmx: back to the session page, the refusal as a message with its code.
    plain = dev_client.post(f"/sessions/{session.id}/runs/", {"request": "Third"}, follow=True)
    assert plain.redirect_chain == [(f"/sessions/{session.id}/", 302)]
    assert '<code class="message-code">ACODE-RUN-002</code>' in plain.content.decode()


# -- the pipeline ------------------------------------------------------------------------


def test_the_panel_shows_the_stages_verdicts_evidence_risk_and_budget_of_a_run(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    script_medium_run(reviews=[REVISE, APPROVE])
    run = drive(
        run_start(session=session, request="Add a greeting helper", user=user, risk="medium")
    )
    assert run.status == RunStatus.SUCCEEDED
    full = page(dev_client, session)
    html = panel(full)
    assert 'data-status="succeeded"' in html and "All steps complete" in html
    # Every template stage done; code, test and review ran twice (one revision).
    nodes = re.findall(r'data-purpose="(\w+)" data-state="(\w+)"', html)
    assert nodes == [("plan", "done"), ("code", "done"), ("test", "done"), ("review", "done")]
    assert html.count('title="Ran 2 times"') == 3
    stages = re.findall(r'data-seq="(\d+)" data-purpose="(\w+)" data-status="(\w+)"', html)
    assert [p for _, p, _ in stages] == [
        "plan",
        "code",
        "test",
        "review",
        "code",
        "test",
        "review",
    ]
    assert {s for _, _, s in stages} == {"succeeded"}
    assert "Executing plan step 1/1: Add a greeting helper" in html
    assert "revision 1" in html and "step 1" in html
    assert 'data-verdict="request_changes"' in html and 'data-verdict="approve"' in html
    assert '<code class="finding-where">greet.py:1</code> greet() needs a name parameter' in html
    assert "Test evidence: <code>" in html and "pytest" in html
    assert 'data-risk="medium"' in html
    calls_used = sum(Job.objects.filter(session=session).values_list("llm_calls", flat=True))
    assert re.search(rf'data-budget="llm calls"><dt>LLM calls</dt><dd>{calls_used} ', html)
    assert "badge" in html and "--badge-bg" in html  # stages in their role's colour
    assert actions(full) == {"start"}  # the run ended: another may start
    # A stage's job link shows that job's card.
    coder_job = Job.objects.filter(session=session, role__slug="coder").earliest("created_at")
    card = dev_client.get(f"/sessions/{session.id}/jobs/{coder_job.id}/", **HX)
    assert card.status_code == 200
    assert f'data-job="{coder_job.id}"' in card.content.decode()
    assert "create_file" in card.content.decode()
    job_page = dev_client.get(f"/sessions/{session.id}/jobs/{coder_job.id}/").content.decode()
    assert "<html" in job_page and "Job #" in job_page


# -- questions, the gate, cancelling -----------------------------------------------------


def test_a_question_shows_with_an_answer_form_and_the_answer_resumes_the_run(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    script_question()
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))
    assert run.status == RunStatus.AWAITING_INPUT
    html = page(dev_client, session)
    assert 'data-status="awaiting_input"' in panel(html)
    assert "Which greeting language?" in panel(html)
    assert actions(html) == {"answer", "cancel"}
    blank = dev_client.post(f"/runs/{run.id}/answer/", {"answer": " "}, **HX)
    assert 'data-code="ACODE-API-400"' in blank.content.decode()
    answered = dev_client.post(f"/runs/{run.id}/answer/", {"answer": "English"}, **HX)
    assert 'data-status="running"' in answered.content.decode()
    assert "English" in answered.content.decode()  # under the answers given
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED
    again = dev_client.post(f"/runs/{run.id}/answer/", {"answer": "late"}, **HX)
    assert 'data-code="ACODE-RUN-004"' in again.content.decode()


def test_approve_and_reject_are_shown_to_approvers_but_not_to_the_starter(
    dev_client: Client, lead_client: Client, session: AgentSession, user: User
) -> None:
    starter = grant_approve(user)
    run = high_run_at_gate(session, starter)
    digest = run.approvals.get(status=ApprovalStatus.PENDING).digest
    mine = page(dev_client, session)
    assert digest in panel(mine)
    assert actions(mine) == {"cancel"}
    assert "whoever started the run cannot approve it" in panel(mine)
    theirs = page(lead_client, session)
    assert actions(theirs) == {"approve", "reject", "cancel"}
    assert f'<input type="hidden" name="digest" value="{digest}">' in panel(theirs)
    assert 'data-purpose="approval" data-state="current"' in panel(theirs)
    # The starter's own approval is refused by the service, with its code.
    refused = dev_client.post(f"/runs/{run.id}/approve/", {"digest": digest}, **HX)
    assert 'data-code="ACODE-RUN-009"' in refused.content.decode()
    approved = lead_client.post(
        f"/runs/{run.id}/approve/", {"digest": digest, "reason": "checked"}, **HX
    )
    html = approved.content.decode()
    assert 'data-status="succeeded"' in html
    assert "Approved" in html and "by lead: checked" in html


def test_approving_a_stale_digest_shows_the_refusal_and_the_new_digest(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    run = high_run_at_gate(session, user)
    old = run.approvals.get(status=ApprovalStatus.PENDING).digest
    # as the run itself records it: nobody else changes a session in a run
    server_write(session, "greet.py", "def greet():\n    return 1\n", run_id=run.pk)
    stale = lead_client.post(f"/runs/{run.id}/approve/", {"digest": old}, **HX)
    html = stale.content.decode()
    new = run.approvals.get(status=ApprovalStatus.PENDING).digest
    assert new != old
    assert 'data-code="ACODE-RUN-011"' in html
    assert f'Waiting for approval now: <code class="run-digest">{new}</code>' in html
    assert f'name="digest" value="{new}"' in html  # the form now approves what is there
    assert lead_client.post(f"/runs/{run.id}/approve/", {"digest": ""}, **HX).status_code == 200
    approved = lead_client.post(f"/runs/{run.id}/approve/", {"digest": new}, **HX)
    assert 'data-status="succeeded"' in approved.content.decode()


def test_reject_needs_a_reason_and_ends_the_run(
    lead_client: Client, session: AgentSession, user: User
) -> None:
    run = high_run_at_gate(session, user)
    blank = lead_client.post(f"/runs/{run.id}/reject/", {"reason": ""}, **HX)
    assert 'data-code="ACODE-API-400"' in blank.content.decode()
    rejected = lead_client.post(f"/runs/{run.id}/reject/", {"reason": "not now"}, **HX)
    html = rejected.content.decode()
    assert 'data-status="rejected"' in html and "Rejected by lead: not now" in html


def test_someone_without_the_permission_gets_the_service_refusal(
    session: AgentSession, user: User, django_user_model: Any
) -> None:
    run = high_run_at_gate(session, user)
    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-1")
    viewer.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    client = Client()
    client.force_login(viewer)
    assert actions(page(client, session)) == set()
    digest = run.approvals.get().digest
    refused = client.post(f"/runs/{run.id}/approve/", {"digest": digest}, **HX)
    assert 'data-code="ACODE-RUN-008"' in refused.content.decode()
    cancel = client.post(f"/runs/{run.id}/cancel/", {}, **HX)
    assert 'data-code="ACODE-API-403"' in cancel.content.decode()
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL


def test_cancel_stops_a_waiting_run_at_once_and_a_running_one_at_its_stage_end(
    dev_client: Client, session: AgentSession, user: User
) -> None:
    script_question()
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))
    cancelled = dev_client.post(f"/runs/{run.id}/cancel/", {}, **HX)
    assert 'data-status="cancelled"' in cancelled.content.decode()
    other = session_create(owner=user, title="second")
    running = run_start(session=other, request="Add a greeting helper", user=user)
    first_job = Job.objects.get(session=other)
    job_start(first_job.pk)  # a worker is running the first stage's job
    response = dev_client.post(f"/runs/{running.id}/cancel/", {}, follow=True)
    assert response.redirect_chain == [(f"/sessions/{other.id}/", 302)]
    assert "Cancel requested" in response.content.decode()
    running.refresh_from_db()
    assert running.status == RunStatus.RUNNING and running.cancel_requested


def test_a_user_who_cannot_see_the_session_gets_404(
    session: AgentSession, user: User, django_user_model: Any
) -> None:
    script_question()
    run = drive(run_start(session=session, request="Add a greeting helper", user=user))
    job = Job.objects.filter(session=session).first()
    assert job is not None
    stranger = django_user_model.objects.create_user("stranger", password="pw-stranger-1")
    client = Client()
    client.force_login(grant_approve(stranger))
    assert client.get(f"/sessions/{session.id}/").status_code == 404
    assert client.get(f"/sessions/{session.id}/jobs/{job.id}/").status_code == 404
    assert client.post(f"/sessions/{session.id}/runs/", {"request": "x"}).status_code == 404
    for action, data in (
        ("answer", {"answer": "x"}),
        ("approve", {"digest": "x"}),
        ("reject", {"reason": "x"}),
        ("cancel", {}),
    ):
        assert client.post(f"/runs/{run.id}/{action}/", data, **HX).status_code == 404
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_INPUT


# -- the board ---------------------------------------------------------------------------


def test_board_cards_show_the_latest_run_without_a_query_per_card(
    dev_client: Client,
    session: AgentSession,
    user: User,
    django_assert_max_num_queries: Any,
) -> None:
    run_start(session=session, request="Add a greeting helper", user=user)
    for n in range(5):
        session_create(owner=user, title=f"other {n}")
    html = dev_client.get("/").content.decode()
    card = html.split(f'id="card-{session.id}"')[1].split("</article>")[0]
    assert 'data-run-status="running"' in card and "Run: Running" in card
    assert html.count("data-run-status=") == 1
    with django_assert_max_num_queries(30) as queries:
        dev_client.get("/")
    few = len(queries.captured_queries)
    for n in range(10):
        other = session_create(owner=user, title=f"more {n}")
        run_start(session=other, request="Add a greeting helper", user=user)
    with django_assert_max_num_queries(few):
        dev_client.get("/")


# -- live --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_run_events_push_the_panel_each_viewer_may_act_on(
    settings: Any, user: User, django_user_model: Any
) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    starter = grant_approve(user)
    session = session_create(owner=starter, title="Live run")
    run = high_run_at_gate(session, starter)
    lead = django_user_model.objects.create_superuser("lead", "l@example.com", "pw-lead-123")
    router = URLRouter(websocket_urlpatterns)

    async def body() -> None:
        sockets = []
        for who in (starter, lead):
            comm = WebsocketCommunicator(router, f"/ws/sessions/{session.id}/")
            comm.scope["user"] = who
            assert (await comm.connect())[0]
            first = await comm.receive_from()
            assert 'id="run-panel"' in first
            sockets.append(comm)
        await get_channel_layer().group_send(
            session_group(session.id),
            {
                "type": "session.event",
                "kind": "run.updated",
                "session": str(session.id),
                "data": {"run": str(run.id), "status": run.status},
            },
        )
        mine, theirs = [await comm.receive_from() for comm in sockets]
        for html in (mine, theirs):
            assert html.lstrip().startswith('<section id="session-header"')
            assert '<div id="session-transitions"' in html
            assert 'id="run-panel"' in html and 'data-status="awaiting_approval"' in html
        assert 'data-action="approve"' not in mine  # the starter
        assert 'data-action="approve"' in theirs  # another approver
        for comm in sockets:
            await comm.disconnect()

    async_to_sync(body)()


# -- what was delivered ------------------------------------------------------------------


def section(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}"')
    return html[start : html.index("</section>", start)]


def test_an_approved_run_shows_its_commit_branch_files_and_patch_to_everyone(
    dev_client: Client, lead_client: Client, session: AgentSession, user: User
) -> None:
    run = high_run_at_gate(session, grant_approve(user))
    before = page(dev_client, session)
    assert "data-commit=" not in before
    assert "Nothing delivered yet" in section(before, "session-delivered")
    digest = run.approvals.get(status=ApprovalStatus.PENDING).digest
    lead_client.post(f"/runs/{run.id}/approve/", {"digest": digest}, **HX)

    commit = DeliveredCommit.objects.get(session=session)
    patch_url = f"/api/sessions/{session.id}/patch/?commit={commit.sha}"
    for client in (dev_client, lead_client):
        html = page(client, session)
        for part in (panel(html), section(html, "session-delivered")):
            assert f'data-commit="{commit.sha}"' in part
            assert (
                f'<code class="delivered-sha" title="{commit.sha}">{commit.sha[:12]}</code>' in part
            )
            assert f'<code class="delivered-branch">acode/{session.id}</code>' in part
            assert '<code class="delivered-path">greet.py</code>' in part
            assert "· approved by lead ·" in part
            assert f'href="{patch_url}"' in part
            assert "data-push-status" not in part  # no pushable remote: nothing to say
        assert f'href="/api/sessions/{session.id}/patch/"' in section(html, "session-delivered")
    patch = dev_client.get(patch_url)
    assert patch.status_code == 200 and b"+def greet():" in patch.content


def test_a_failed_push_is_shown_in_words_with_the_commit(
    dev_client: Client, session: AgentSession
) -> None:
    run = Run.objects.create(
        session=session,
        template=WorkflowTemplate.objects.get(slug="low"),
        request="x",
        declared_tier="low",
        effective_tier="low",
        status=RunStatus.SUCCEEDED,
        max_llm_calls=1,
        max_tokens=1,
        max_seconds=1,
        created_by="dev",
    )
    DeliveredCommit.objects.create(
        session=session,
        run=run,
        sha="a" * 40,
        branch=session.branch,
        message="Add greet()\n\nApproved in role Reviewer.",
        files=[{"path": "greet.py", "kind": "created", "added": 2, "removed": 0}],
        approved_by="lead",
        push_status=PushStatus.FAILED,
        push_remote="https://***@example.com/app.git",
        push_message="fatal: unable to access 'https://example.com/app.git/'",
    )
    html = page(dev_client, session)
    for part in (panel(html), section(html, "session-delivered")):
        assert 'data-push-status="failed" role="alert"' in part
        assert "Push failed" in part and "The commit stands on the session branch" in part
        assert "https://***@example.com/app.git" in part
        assert "fatal: unable to access" in part
