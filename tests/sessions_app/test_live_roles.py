"""Role edits are live: a committed change to role data, whatever wrote it (admin, API,
YAML import), publishes one ``roles.changed`` event after the commit and never for a
change that rolled back; every open board, session page and roles page then shows it,
each to the users allowed to see what it shows."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from roles.models import PromptComponent, Role, Tool, TransitionRule
from roles.portability.definitions import export_definitions, import_definitions
from roles.services import (
    prompt_component_save,
    role_write,
    tool_save,
    transition_rule_save,
)
from sessions_app.models import AgentSession
from sessions_app.services import audit as events
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from tests.roles.test_registry import _role_form_data
from tests.sessions_app.test_consumers import communicator, root_ids, run

# Consumers and on-commit hooks need real commits: these tests commit, then flush.
pytestmark = pytest.mark.django_db(transaction=True)

ROLES_CHANGED = (events.ROLES_GROUP, "roles.changed")
# How long a page may take to arrive: each page renders in turn on one thread, which takes
# seconds on a loaded CI machine (an absent push is still caught: it never arrives).
PAGE_WAIT = 10


# -- publishing -----------------------------------------------------------------------
def test_a_role_edit_over_the_api_publishes_one_event(
    sent: list[tuple[str, str]], boss_api: APIClient
) -> None:
    # The role, its permissions, its tools and a new version: one transaction, one event.
    response = boss_api.patch(
        "/api/roles/coder/",
        {"description": "Writes the code.", "permissions": ["read_files", "write_files"]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert sent == [ROLES_CHANGED]


def test_a_refused_api_edit_publishes_nothing(
    sent: list[tuple[str, str]], boss_api: APIClient
) -> None:
    response = boss_api.patch("/api/roles/coder/", {"write_paths": ["../x"]}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "ACODE-ROL-004"
    assert sent == []


def test_a_yaml_import_over_the_api_publishes_one_event(
    sent: list[tuple[str, str]], boss_api: APIClient
) -> None:
    text = boss_api.get("/api/roles/export/").content.decode()
    changed = text.replace("max_llm_calls: 30", "max_llm_calls: 31")
    assert changed != text
    response = boss_api.post("/api/roles/import/", changed, content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert sent == [ROLES_CHANGED]


def test_a_refused_yaml_import_publishes_nothing(
    sent: list[tuple[str, str]], boss_api: APIClient
) -> None:
    broken = boss_api.post("/api/roles/import/", "format: nope\n", content_type="application/yaml")
    assert broken.status_code == 400 and broken.json()["code"] == "ACODE-IMP-001"
    assert sent == []


def test_an_import_is_published_after_commit_and_never_when_rolled_back(
    sent: list[tuple[str, str]],
) -> None:
    document = export_definitions()
    for role in document["roles"]:
        if role["slug"] == "coder":
            role["description"] = "Rolled back."
    with pytest.raises(RuntimeError), transaction.atomic():
        import_definitions(document, actor="test")
        assert sent == []  # written, not committed: nobody hears of it yet
        raise RuntimeError("roll back")
    assert sent == []
    assert Role.objects.get(slug="coder").description != "Rolled back."
    with transaction.atomic():
        import_definitions(document, actor="test")
        assert sent == []
    assert sent == [ROLES_CHANGED]


def test_a_role_edit_that_rolls_back_publishes_nothing(sent: list[tuple[str, str]]) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        role_write(data={"name": "Builder"}, actor="test", create=False, slug="coder")
        raise RuntimeError("roll back")
    assert sent == []
    role_write(data={"name": "Builder"}, actor="test", create=False, slug="coder")
    assert sent == [ROLES_CHANGED]


def _edit_tool() -> None:
    tool = Tool.objects.get(name="read_file")
    tool.description = "Reads one file."
    tool_save(tool=tool, actor="test")


def _edit_rule() -> None:
    rule = TransitionRule.objects.select_related("from_role", "to_role").first()
    assert rule is not None
    rule.explanation = "Only with a plan."
    transition_rule_save(rule=rule, actor="test")


def _edit_prompt() -> None:
    component = PromptComponent.objects.first()
    assert component is not None
    component.content += "\nBe brief."
    prompt_component_save(component=component, actor="test")


@pytest.mark.parametrize("edit", [_edit_tool, _edit_rule, _edit_prompt], ids=lambda f: f.__name__)
def test_a_tool_rule_or_prompt_edit_publishes_one_event(
    sent: list[tuple[str, str]], edit: Any
) -> None:
    edit()
    assert sent == [ROLES_CHANGED]


def test_a_role_edit_in_admin_publishes_one_event(
    sent: list[tuple[str, str]], admin_client_logged_in: Any
) -> None:
    coder = Role.objects.get(slug="coder")
    form = {**_role_form_data(coder), "name": "Builder"}
    response = admin_client_logged_in.post(f"/admin/roles/role/{coder.pk}/change/", form)
    assert response.status_code == 302
    assert sent == [ROLES_CHANGED]


def test_a_role_edit_over_the_asgi_stack_reaches_listeners(admin_user: User) -> None:
    """The production path: the ASGI app and the configured channel layer (Redis when
    REDIS_URL is set)."""
    auth = {"Authorization": f"Token {Token.objects.create(user=admin_user).key}"}
    layer = get_channel_layer()
    assert layer is not None

    async def go() -> tuple[httpx.Response, dict[str, Any]]:
        channel = await layer.new_channel()
        await layer.group_add(events.ROLES_GROUP, channel)
        try:
            transport = httpx.ASGITransport(app=_application())
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                edited = await c.patch(
                    "/api/roles/coder/", json={"description": "Live now."}, headers=auth
                )
            message = await asyncio.wait_for(layer.receive(channel), timeout=10)
        finally:
            await layer.group_discard(events.ROLES_GROUP, channel)
        return edited, message

    edited, message = async_to_sync(go)()
    assert edited.status_code == 200, edited.text
    assert message == {"type": "roles.changed", "kind": "roles.changed"}


def _application() -> Any:
    from acode.asgi import application

    return application


# -- the pages ------------------------------------------------------------------------
@pytest.fixture
def _in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def planning(user: User) -> AgentSession:
    session = session_create(owner=user, title="Owned by dev")
    session_transition(session=session, to_role="planner", reason="Plan it", user=user)
    return session


@pytest.mark.usefixtures("_in_memory_layer")
def test_anonymous_roles_connection_is_refused() -> None:
    async def body() -> None:
        connected, _ = await communicator("/ws/roles/", AnonymousUser()).connect()
        assert connected is False

    run(body)


@pytest.mark.usefixtures("_in_memory_layer")
def test_roles_socket_sends_the_roles_page_on_connect(user: User) -> None:
    async def body() -> None:
        comm = communicator("/ws/roles/", user)
        assert (await comm.connect())[0]
        html = await comm.receive_from(timeout=PAGE_WAIT)
        assert root_ids(html) == ["role-cards", "tool-matrix", "transition-rules"]
        assert 'id="role-planner"' in html
        await comm.disconnect()

    run(body)


@pytest.mark.usefixtures("_in_memory_layer")
def test_a_role_edit_reaches_every_open_page_of_those_who_may_see_it(
    planning: AgentSession, user: User, django_user_model: Any
) -> None:
    stranger = django_user_model.objects.create_user("stranger", "s@example.com", "pw-str-123")

    async def body() -> None:
        pages = {
            "board": communicator("/ws/board/", user),
            "session": communicator(f"/ws/sessions/{planning.id}/", user),
            "roles": communicator("/ws/roles/", user),
            "their board": communicator("/ws/board/", stranger),
        }
        for comm in pages.values():
            assert (await comm.connect())[0]
            assert "Architect" not in await comm.receive_from(timeout=PAGE_WAIT)
        refused = communicator(f"/ws/sessions/{planning.id}/", stranger)
        assert (await refused.connect())[0] is False

        await database_sync_to_async(role_write)(
            data={"name": "Architect", "description": "Designs before anyone builds."},
            actor="boss",
            create=False,
            slug="planner",
        )

        board = await pages["board"].receive_from(timeout=PAGE_WAIT)
        assert root_ids(board) == ["board-columns", "board-role-filter", "board-model-notice"]
        assert 'id="col-planner"' in board and "Architect" in board
        assert "Owned by dev" in board
        assert '<option value="planner">Architect</option>' in board  # the role filter
        session = await pages["session"].receive_from(timeout=PAGE_WAIT)
        assert root_ids(session)[0] == "session-header"
        header = session.split('id="session-transitions"')[0]
        assert 'data-role="planner"' in header and "Architect" in header
        roles = await pages["roles"].receive_from(timeout=PAGE_WAIT)
        assert root_ids(roles) == ["role-cards", "tool-matrix", "transition-rules"]
        assert "Designs before anyone builds." in roles
        # The stranger sees the renamed column, never the session they may not see.
        theirs = await pages["their board"].receive_from(timeout=PAGE_WAIT)
        assert "Architect" in theirs and "Owned by dev" not in theirs
        assert await refused.receive_nothing(timeout=0.2)
        for comm in pages.values():
            assert await comm.receive_nothing(timeout=0.2)  # one event, one push
            await comm.disconnect()

    run(body)
