"""The kanban: columns by status on the page; the same fragment pushed live to every
viewer when a task moves; strangers see nothing; actions only for who may act."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import Client

from acode.routing import websocket_urlpatterns
from sessions_app.dashboard.backlog import render_kanban
from sessions_app.models import BacklogProject, BacklogTask
from sessions_app.services.backlog import backlog_import, project_create, task_move

pytestmark = pytest.mark.django_db(transaction=True)

ROUTER = URLRouter(websocket_urlpatterns)


@pytest.fixture(autouse=True)
def _in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def project(user: User) -> BacklogProject:
    made = project_create(owner=user, slug="shop", title="Shop")
    backlog_import(project=made, actor="t", document={"tasks": [
        {"key": "hello", "title": "Add hello.py", "priority": "high"},
        {"key": "docs", "title": "Write docs", "depends_on": ["hello"]},
    ]})  # fmt: skip
    backlog_import(project=made, actor="pm", proposed_by="product-manager",
                   document={"tasks": [{"key": "more", "title": "Follow-up"}]})  # fmt: skip
    return made


def test_the_page_shows_columns_and_offers_actions_to_the_owner(
    user: User, project: BacklogProject
) -> None:
    client = Client()
    client.force_login(user)
    page = client.get("/backlog/shop/").content.decode()
    assert 'id="backlog-col-backlog"' in page and 'id="backlog-col-proposed"' in page
    assert 'id="task-hello"' in page and "after hello" in page
    assert "/backlog/shop/tasks/more/accept/" in page
    assert 'ws-connect="/ws/backlog/shop/"' in page

    assert client.post("/backlog/shop/tasks/more/accept/").status_code == 302
    assert BacklogTask.objects.get(key="more").status == "backlog"
    client.post("/backlog/shop/tasks/docs/priority/", {"priority": "low"})
    assert BacklogTask.objects.get(key="docs").priority == "low"


def test_a_team_lead_sees_without_actions_and_a_stranger_gets_404(
    django_user_model: Any, project: BacklogProject
) -> None:
    lead = django_user_model.objects.create_user("lead", password="pw-lead-123")
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    stranger = django_user_model.objects.create_user("stranger", password="pw-s-123")
    client = Client()
    client.force_login(lead)
    page = client.get("/backlog/shop/").content.decode()
    assert 'id="task-hello"' in page and "/accept/" not in page
    assert client.post("/backlog/shop/tasks/more/accept/").status_code == 302
    assert BacklogTask.objects.get(key="more").status == "proposed"  # refused: 403 message
    client.force_login(stranger)
    assert client.get("/backlog/shop/").status_code == 404


def test_two_viewers_follow_a_move_live(user: User, project: BacklogProject,
                                        django_user_model: Any) -> None:  # fmt: skip
    lead = django_user_model.objects.create_superuser("lead", "l@x", "pw-lead-123")
    stranger = django_user_model.objects.create_user("stranger", password="pw-s-123")

    async def body() -> None:
        viewers = []
        for who in (user, lead):
            comm = WebsocketCommunicator(ROUTER, "/ws/backlog/shop/")
            comm.scope["user"] = who
            assert (await comm.connect())[0]
            first = await comm.receive_from(timeout=10)
            assert 'id="backlog-kanban"' in first
            viewers.append(comm)
        outsider = WebsocketCommunicator(ROUTER, "/ws/backlog/shop/")
        outsider.scope["user"] = stranger
        assert not (await outsider.connect())[0]

        from channels.db import database_sync_to_async

        task = await database_sync_to_async(BacklogTask.objects.get)(key="hello")
        await database_sync_to_async(task_move)(task=task, to="blocked", actor="t",
                                                reason="Waiting on legal")  # fmt: skip
        for comm in viewers:
            pushed = await comm.receive_from(timeout=10)
            assert 'data-status="blocked"' in pushed and "Waiting on legal" in pushed
            await comm.disconnect()

    async_to_sync(body)()


def test_the_boards_forms_post_with_htmx_and_get_the_kanban_back(
    user: User, project: BacklogProject, django_user_model: Any
) -> None:
    # A fragment pushed over the socket has no CSRF field: its forms post with htmx, whose
    # header carries the page's token.
    pushed = render_kanban(user, "shop")
    assert 'hx-post="/backlog/shop/tasks/more/accept/"' in pushed
    assert "csrfmiddlewaretoken" not in pushed
    client = Client()
    client.force_login(user)
    answer = client.post("/backlog/shop/tasks/more/accept/", HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    assert 'id="backlog-kanban"' in answer.content.decode()
    assert 'data-task="more" data-status="backlog"' in answer.content.decode()

    lead = django_user_model.objects.create_user("lead", password="pw-lead-123")
    lead.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    client.force_login(lead)
    refused = client.post("/backlog/shop/tasks/docs/priority/", {"priority": "low"},
                          HTTP_HX_REQUEST="true")  # fmt: skip
    assert refused["HX-Redirect"] == "/backlog/shop/"
    assert "ACODE-API-403" in client.get("/backlog/shop/").content.decode()
    assert BacklogTask.objects.get(key="docs").priority == "medium"
