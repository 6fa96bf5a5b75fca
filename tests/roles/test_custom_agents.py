"""Custom agents (issue 41): a user holding roles.configure makes one from a role template;
it never holds write, execute or network permissions, whichever way it is edited later
(admin, API, YAML import, a parent change, even a row written past the services), and
admins see who made which."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission as UserPermission
from django.test import Client
from rest_framework.test import APIClient

from acode.errors import AcodeError
from roles.models import CustomAgent, Permission, PromptComponent, Role, TransitionRule
from roles.portability.definitions import export_definitions, import_definitions
from roles.registry import registry
from sessions_app.agent.executor import tool_check
from sessions_app.models import AgentSession
from sessions_app.services.plans import plan_set
from tests.roles.test_registry import _role_form_data
from tests.sessions_app.apis.apikit import new_session, transition

pytestmark = pytest.mark.django_db

LOCKED = {"create_files", "write_files", "delete_files", "execute_commands", "network"}
AGENT = {
    "name": "Docs Critic",
    "template": "coder",
    "goals": ["Find docs that disagree with the code"],
    "checklist": ["Cite the file and line", "Never suggest edits to code"],
    "routing_keywords": ["docs", "documentation"],
    "prompt": "You review documentation against the code and report what disagrees.",
}


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def maker(django_user_model: Any) -> Any:
    """A user who is not staff and may create custom agents."""
    person = django_user_model.objects.create_user("maker", password="pw-maker-1")
    person.user_permissions.add(UserPermission.objects.get(codename="configure"))
    return person


def _made(maker: Any) -> str:
    response = _api(maker).post("/api/agents/", AGENT, format="json")
    assert response.status_code == 201, response.json()
    return str(response.json()["role"])


def test_a_user_with_configure_makes_a_read_only_agent_from_a_template(maker: Any) -> None:
    response = _api(maker).post("/api/agents/", AGENT, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["role"], body["template"], body["created_by"]) == ("docs-critic", "coder", "maker")
    # The Coder writes and runs commands; the agent made from it does neither.
    assert set(body["effective_permissions"]) == {"ask_human", "read_files"}
    assert not LOCKED & set(body["effective_permissions"])
    assert "write_file" not in body["effective_tools"] and "read_file" in body["effective_tools"]
    role = registry.get("docs-critic")
    assert role.spec.custom and role.spec.parent == "coder"
    assert role.spec.capabilities == tuple(AGENT["goals"])
    assert role.spec.constraints == tuple(AGENT["checklist"])
    assert role.prompt_component_key == "roles/docs-critic"
    denied = tool_check(
        role, "write_file", {"path": "a.py", "content": "x"}, __import__("pathlib").Path(".")
    )
    assert denied.outcome == "deny"
    assert "a custom agent never holds write, execute or network permissions" in denied.reason
    assert [a["role"] for a in _api(maker).get("/api/agents/").json()] == ["docs-critic"]


def test_without_configure_a_user_cannot_make_an_agent(user: Any) -> None:
    response = _api(user).post("/api/agents/", AGENT, format="json")
    assert response.status_code == 403 and response.json()["code"] == "ACODE-ROL-017"
    assert not Role.objects.filter(slug="docs-critic").exists()


def test_admins_see_who_made_which(
    maker: Any, admin_client_logged_in: Any, admin_user: Any
) -> None:
    slug = _made(maker)
    listed = _api(admin_user).get("/api/agents/").json()
    assert [(a["role"], a["created_by"]) for a in listed] == [(slug, "maker")]
    page = admin_client_logged_in.get("/admin/roles/customagent/").content.decode()
    assert "Docs Critic" in page and "maker" in page
    role = Role.objects.get(slug=slug)
    change = admin_client_logged_in.get(f"/admin/roles/role/{role.pk}/change/").content.decode()
    assert "Custom agent made by" in change and "maker" in change


def test_the_api_cannot_give_a_custom_agent_write_or_execute(maker: Any, admin_user: Any) -> None:
    slug = _made(maker)
    admin = _api(admin_user)
    for perms in (["read_files", "write_files"], ["read_files", "execute_commands"], ["network"]):
        response = admin.patch(f"/api/roles/{slug}/", {"permissions": perms}, format="json")
        assert response.status_code == 400 and response.json()["code"] == "ACODE-ROL-016"
    # The flag is set when a role is made; an update cannot name it.
    response = admin.patch(f"/api/roles/{slug}/", {"custom": False}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "ACODE-ROL-004"
    assert "custom" in response.json()["message"]
    # An admin's own role made custom with write: refused as well.
    created = admin.post("/api/roles/", {"slug": "mine", "name": "Mine", "custom": True,
                                         "permissions": ["write_files"]}, format="json")  # fmt: skip
    assert created.status_code == 400 and created.json()["code"] == "ACODE-ROL-016"
    assert set(Role.objects.get(slug=slug).permissions.values_list("code", flat=True)) == {
        "ask_human",
        "read_files",
    }


def test_admin_cannot_give_a_custom_agent_write_or_execute(
    maker: Any, admin_client_logged_in: Any
) -> None:
    role = Role.objects.get(slug=_made(maker))
    form = _role_form_data(role)
    form["permissions"] = [
        str(p.pk) for p in Permission.objects.filter(code__in=["read_files", "write_files"])
    ]
    response = admin_client_logged_in.post(f"/admin/roles/role/{role.pk}/change/", form)
    assert response.status_code == 200  # the form again, with the refusal
    assert "ACODE-ROL-016" in response.content.decode()
    assert "write_files" not in role.permissions.values_list("code", flat=True)


def test_an_import_cannot_give_a_custom_agent_write_or_execute(maker: Any) -> None:
    slug = _made(maker)
    data = export_definitions()
    entry = next(r for r in data["roles"] if r["slug"] == slug)
    assert entry["custom"] is True  # exported as what it is
    entry["permissions"] = ["execute_commands", "read_files"]
    with pytest.raises(AcodeError) as info:
        import_definitions(data, actor="test")
    assert "a custom agent never holds" in info.value.message
    entry.pop("custom")  # leaving the flag out does not unset it
    with pytest.raises(AcodeError):
        import_definitions(data, actor="test")
    assert "execute_commands" not in registry.get(slug).spec.permissions


def test_a_parent_change_or_a_row_past_the_services_grants_nothing(
    maker: Any, admin_user: Any
) -> None:
    slug = _made(maker)
    response = _api(admin_user).patch(f"/api/roles/{slug}/", {"parent": "default"}, format="json")
    assert response.status_code == 200, response.json()
    assert not LOCKED & set(registry.get(slug).access.permissions)
    # A row written past every check (a shell, a bad migration): the lock still holds where
    # permissions are decided, for the agent and for any role below it.
    role = Role.objects.get(slug=slug)
    role.permissions.add(*Permission.objects.filter(code__in=LOCKED))
    child = Role.objects.create(slug="below", name="Below", prompt_key="system", parent=role)
    child.permissions.add(*Permission.objects.filter(code__in=LOCKED | {"read_files"}))
    registry.invalidate()
    for name in (slug, "below"):
        access = registry.get(name).access
        assert not LOCKED & set(access.permissions)
        assert {"write_file", "create_file", "execute_command"}.isdisjoint(access.tools)
    assert CustomAgent.objects.get(role=role).created_by_name == "maker"


def test_a_user_makes_an_agent_on_the_dashboard(maker: Any, user: Any) -> None:
    client = Client()
    client.force_login(maker)
    assert "Make an agent" in client.get("/agents/").content.decode()
    response = client.post("/agents/", {
        "name": "Docs Critic", "template": "coder", "goals": "Find stale docs\nCite them",
        "checklist": "Cite the file", "keywords": "docs, documentation", "prompt": "",
    }, follow=True)  # fmt: skip
    page = response.content.decode()
    assert "Agent docs-critic created." in page and "ask_human, read_files" in page
    assert "Default (when the session has a plan)" in page  # where the Coder is entered
    assert registry.get("docs-critic").spec.capabilities == ("Find stale docs", "Cite them")
    refused = client.post("/agents/", {"name": "Docs Critic", "template": "coder",
                                       "goals": "x", "checklist": "y"})  # fmt: skip
    assert refused.status_code == 400 and "ACODE-API-409" in refused.content.decode()
    other = Client()
    other.force_login(user)  # no roles.configure: sees none of it, and no form
    page = other.get("/agents/").content.decode()
    assert "Make an agent" not in page and "docs-critic" not in page
    refused = other.post("/agents/", {"delete": "docs-critic"})
    assert refused.status_code == 400 and "ACODE-ROL-001" in refused.content.decode()
    deleted = client.post("/agents/", {"delete": "docs-critic"}, follow=True).content.decode()
    assert "Agent docs-critic deleted." in deleted and not Role.objects.filter(slug="docs-critic")


def test_a_session_enters_the_agent_where_it_would_enter_its_template(maker: Any) -> None:
    """An agent a user makes can be used at once: a session enters it wherever it could
    enter the template, under the template's precondition, and leaves it for Default. The
    ways in are rules like any (admin, the export and the policy diff see them)."""
    api = _api(maker)
    planned = api.post("/api/agents/", {**AGENT, "name": "Scout", "template": "planner"},
                       format="json")  # fmt: skip
    assert planned.status_code == 201, planned.json()
    critic = _made(maker)  # from the Coder: entered only once there is a plan
    rules = export_definitions()["transition_rules"]
    into = {(r["from"], r["precondition"]) for r in rules if r["to"] == critic}
    assert into == {(r["from"], r["precondition"]) for r in rules if r["to"] == "coder"}
    assert not [r for r in rules if r["from"] in ("scout", critic)]  # no new way into others

    sid = new_session(api)["id"]
    refused = transition(api, sid, critic)
    assert refused.status_code == 409 and refused.json()["code"] == "ACODE-ROL-002"
    assert "has no plan yet" in refused.json()["message"]
    entered = transition(api, sid, "scout", "explore the docs")
    assert entered.status_code == 200, entered.json()
    assert entered.json()["session"]["current_role"]["slug"] == "scout"
    may = sorted(registry.get("scout").access.permissions)
    assert entered.json()["available_permissions"] == may and "write_files" not in may
    page = Client()
    page.force_login(maker)
    assert (
        f"Scout may</dt><dd>{', '.join(may)}</dd>" in page.get(f"/sessions/{sid}/").content.decode()
    )
    back = transition(api, sid, "default")
    assert back.status_code == 200, back.json()
    # Every role returns to Default without a rule: an agent made from it is entered there.
    asker = api.post("/api/agents/", {**AGENT, "name": "Asker", "template": "default"},
                     format="json")  # fmt: skip
    assert asker.status_code == 201, asker.json()
    assert transition(api, sid, "asker").status_code == 200


def test_an_agent_is_suggested_where_the_task_names_its_routing_keywords(maker: Any) -> None:
    """Routing keywords suggest the agent to whoever changes the session's role (the API's
    allowed transitions, the session page, the CLI); they move nothing by themselves."""
    api = _api(maker)
    planned = {**AGENT, "name": "Scout", "template": "planner", "routing_keywords": ["Docs"]}
    assert api.post("/api/agents/", planned, format="json").status_code == 201
    sid = new_session(api, title="Login", task="Bring the DOCS up to date with mydocumentation")[
        "id"
    ]
    options = {t["to_role"]: t for t in api.get(f"/api/sessions/{sid}/transitions/").json()}
    assert options["scout"]["suggested_for"] == ["Docs"] and options["scout"]["allowed_now"]
    assert options["planner"]["suggested_for"] == []  # an ordinary role has no keywords
    unrelated = new_session(api, title="Login", task="Add a login form (no mydocs)")["id"]
    options = {t["to_role"]: t for t in api.get(f"/api/sessions/{unrelated}/transitions/").json()}
    assert options["scout"]["suggested_for"] == []  # whole words only
    assert api.get(f"/api/sessions/{sid}/").json()["current_role"]["slug"] == "default"
    page = Client()
    page.force_login(maker)
    html = page.get(f"/sessions/{sid}/").content.decode()
    assert 'data-transition="scout"' in html and "suggested: Docs" in html


def test_a_custom_agent_never_exceeds_its_hard_limits_a_job(
    maker: Any, admin_user: Any, admin_client_logged_in: Any
) -> None:
    """Seed 004's fixed limits: a custom agent's job makes at most 50 model calls in at most
    30 minutes, whatever its template allows, whichever way it is edited, and whatever is
    stored."""
    admin = _api(admin_user)
    wide = {"slug": "wide", "name": "Wide", "permissions": ["read_files"],
            "max_llm_calls": 200, "timeout_seconds": 7200}  # fmt: skip
    assert admin.post("/api/roles/", wide, format="json").status_code == 201
    made = _api(maker).post("/api/agents/", {**AGENT, "template": "wide"}, format="json")
    assert made.status_code == 201, made.json()
    spec = registry.get("docs-critic").spec
    assert (spec.max_llm_calls, spec.timeout_seconds) == (50, 1800)
    for field, value in (("max_llm_calls", 51), ("timeout_seconds", 1801)):
        refused = admin.patch("/api/roles/docs-critic/", {field: value}, format="json")
        assert refused.status_code == 400 and refused.json()["code"] == "ACODE-ROL-016"
        assert f"{field} is at most" in refused.json()["message"]
    role = Role.objects.get(slug="docs-critic")
    form = {**_role_form_data(role), "max_llm_calls": "500"}
    page = admin_client_logged_in.post(f"/admin/roles/role/{role.pk}/change/", form)
    assert page.status_code == 200 and "ACODE-ROL-016" in page.content.decode()
    assert (
        admin.patch("/api/roles/docs-critic/", {"max_llm_calls": 40}, format="json").status_code
        == 200
    )
    # A row written past every check: the limits hold where a job's budget is read.
    Role.objects.filter(slug="docs-critic").update(max_llm_calls=900, timeout_seconds=99999)
    registry.invalidate()
    spec = registry.get("docs-critic").spec
    assert (spec.max_llm_calls, spec.timeout_seconds) == (50, 1800)


def test_its_maker_deletes_an_agent_with_its_rules_unless_a_session_uses_it(
    maker: Any, user: Any
) -> None:
    api = _api(maker)
    used = _made(maker)
    sid = new_session(api)["id"]
    plan_set(session=AgentSession.objects.get(pk=sid), steps=["Read the docs"], user=maker)
    assert transition(api, sid, used).status_code == 200
    in_use = api.delete(f"/api/agents/{used}/")
    assert in_use.status_code == 409 and in_use.json()["code"] == "ACODE-ROL-005"
    assert TransitionRule.objects.filter(to_role__slug=used).exists()  # nothing deleted
    assert PromptComponent.objects.filter(key=f"roles/{used}").exists()

    made = api.post("/api/agents/", {**AGENT, "name": "Scout"}, format="json")
    assert made.status_code == 201, made.json()
    rules = TransitionRule.objects.filter(to_role__slug="scout")
    assert rules.exists()
    assert _api(user).delete("/api/agents/scout/").status_code == 404  # not theirs to see
    deleted = api.delete("/api/agents/scout/")
    assert deleted.status_code == 204, deleted.json()
    assert not Role.objects.filter(slug="scout").exists() and not rules.exists()
    assert not PromptComponent.objects.filter(key="roles/scout").exists()
    assert [a["role"] for a in api.get("/api/agents/").json()] == [used]
    assert api.delete("/api/agents/scout/").status_code == 404


def test_the_published_schema_says_a_custom_agents_limits(admin_user: Any) -> None:
    """A body that makes a role custom with a larger budget is refused by the published
    schema itself (the API fuzz sends only what the schema allows)."""
    body = {"slug": "mine", "name": "Mine", "custom": True, "timeout_seconds": 1801}
    refused = _api(admin_user).post("/api/roles/", body, format="json")
    assert refused.status_code == 400 and "1800" in refused.json()["message"]
    schema = _api(admin_user).get("/api/schema/", {"format": "json"}).content.decode()
    assert "1800 seconds" in schema and "maximum: 1800" in schema
