"""Reviewed changes to protected roles: an edit by one admin (admin form, API, import)
becomes a draft and changes nothing live until another admin, holding
roles.publish_roledraft, publishes it; every step is audited."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Permission as AuthPermission
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from roles.models import Role, RoleDraft, RoleVersion
from roles.portability.definitions import export_definitions, import_definitions
from roles.portability.document import dump_yaml
from roles.registry import registry
from roles.services import role_versions_record
from sessions_app.models import AuditEvent
from tests.roles.test_registry import _role_form_data

pytestmark = pytest.mark.django_db

ROLE = "reviewer"


def _admin(django_user_model: Any, name: str, *, publish: bool, superuser: bool = False) -> Any:
    if superuser:
        return django_user_model.objects.create_superuser(name, f"{name}@x.io", f"pw-{name}-1")
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1", is_staff=True)
    codes = ["add_role", "change_role", "delete_role", "view_roledraft"]
    codes += ["publish_roledraft"] if publish else []
    user.user_permissions.set(AuthPermission.objects.filter(codename__in=codes))
    return user


@pytest.fixture
def alice(django_user_model: Any) -> Any:
    """An admin who edits roles and may publish drafts (not her own)."""
    return _admin(django_user_model, "alice", publish=True)


@pytest.fixture
def bob(django_user_model: Any) -> Any:
    """Another admin who may publish drafts."""
    return _admin(django_user_model, "bob", publish=True)


@pytest.fixture
def carol(django_user_model: Any) -> Any:
    """An admin who edits roles but may not publish drafts."""
    return _admin(django_user_model, "carol", publish=False)


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def protected(alice: Any) -> Role:
    """The Reviewer, protected by a direct edit."""
    response = _api(alice).patch(f"/api/roles/{ROLE}/", {"protected": True}, format="json")
    assert response.status_code == 200 and response.json()["protected"] is True
    return Role.objects.get(slug=ROLE)


def _live() -> tuple[str, int, str]:
    """What is live: the stored description, the version count, the registry's view."""
    registry.sync()
    role = Role.objects.get(slug=ROLE)
    return (
        role.description,
        RoleVersion.objects.filter(role_slug=ROLE).count(),
        registry.get(ROLE).spec.description,
    )


def _audit(result: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="RoleDataChanged", result=result))


def _draft_by_api(user: Any, description: str = "Reviewed change") -> dict[str, Any]:
    response = _api(user).patch(f"/api/roles/{ROLE}/", {"description": description}, format="json")
    assert response.status_code == 202, response.content
    body: dict[str, Any] = response.json()
    return body


# -- API ------------------------------------------------------------------------------------
def test_an_api_edit_of_a_protected_role_changes_nothing_live_until_another_admin_publishes(
    protected: Role, alice: Any, bob: Any
) -> None:
    before, edits = _live(), AuditEvent.objects.filter(event_type="RoleEdited").count()
    draft = _draft_by_api(alice)
    assert draft["status"] == "open" and draft["author"] == "alice" and not draft["stale"]
    assert draft["diff"] == [
        {"field": "description", "before": protected.description, "after": "Reviewed change"}
    ]
    assert draft["replay"] is None  # the detail shows it (tests/roles/test_draft_replay.py)
    assert _live() == before
    shown = _api(bob).get(f"/api/roles/{ROLE}/").json()
    assert shown["description"] == protected.description
    assert [d["id"] for d in _api(bob).get("/api/role-drafts/?status=open").json()] == [draft["id"]]
    assert _audit("drafted")[-1].actor == "alice"
    assert AuditEvent.objects.filter(event_type="RoleEdited").count() == edits

    response = _api(bob).post(
        f"/api/role-drafts/{draft['id']}/publish/", {"reason": "Looks right"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "published" and response.json()["decided_by"] == "bob"
    description, versions, in_registry = _live()
    assert (description, in_registry) == ("Reviewed change", "Reviewed change")
    assert versions == before[1] + 1
    assert _api(alice).get(f"/api/roles/{ROLE}/").json()["description"] == "Reviewed change"
    published = _audit("published")[-1]
    assert published.actor == "bob"
    assert published.details["author"] == "alice" and published.details["reason"] == "Looks right"
    edited = AuditEvent.objects.filter(event_type="RoleEdited", role=ROLE).last()
    assert edited is not None and edited.actor == "bob"


def test_the_author_cannot_publish_their_own_draft_even_as_superuser(
    protected: Role, django_user_model: Any
) -> None:
    root = _admin(django_user_model, "root", publish=True, superuser=True)
    draft = _draft_by_api(root)
    before = _live()
    response = _api(root).post(f"/api/role-drafts/{draft['id']}/publish/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "ACODE-ROL-010"
    assert _live() == before and RoleDraft.objects.get(pk=draft["id"]).status == "open"
    assert not _audit("published")


def test_an_admin_without_the_permission_cannot_publish_or_reject(
    protected: Role, alice: Any, carol: Any
) -> None:
    draft = _draft_by_api(alice)
    before = _live()
    for action in ("publish", "reject"):
        response = _api(carol).post(f"/api/role-drafts/{draft['id']}/{action}/", format="json")
        assert response.status_code == 403
        assert response.json()["code"] == "ACODE-ROL-011"
    assert _live() == before and RoleDraft.objects.get(pk=draft["id"]).status == "open"


def test_reject_closes_the_draft_and_changes_nothing(protected: Role, alice: Any, bob: Any) -> None:
    draft = _draft_by_api(alice)
    before = _live()
    response = _api(bob).post(
        f"/api/role-drafts/{draft['id']}/reject/", {"reason": "Too wide"}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert _live() == before
    rejected = _audit("rejected")[-1]
    assert rejected.actor == "bob" and rejected.details["reason"] == "Too wide"
    again = _api(bob).post(f"/api/role-drafts/{draft['id']}/publish/", format="json")
    assert again.status_code == 409 and again.json()["code"] == "ACODE-ROL-013"


def test_the_author_may_withdraw_their_own_draft(protected: Role, carol: Any) -> None:
    draft = _draft_by_api(carol)
    response = _api(carol).post(f"/api/role-drafts/{draft['id']}/reject/", format="json")
    assert response.status_code == 200 and response.json()["status"] == "rejected"


def test_a_stale_draft_is_refused(protected: Role, alice: Any, bob: Any) -> None:
    draft = _draft_by_api(alice)
    # The role moves on outside the draft (as a tool or permission change versions it).
    Role.objects.filter(slug=ROLE).update(description="Changed meanwhile")
    role_versions_record(actor="elsewhere")
    assert _api(bob).get(f"/api/role-drafts/{draft['id']}/").json()["stale"] is True
    before = _live()
    response = _api(bob).post(f"/api/role-drafts/{draft['id']}/publish/", format="json")
    assert response.status_code == 409 and response.json()["code"] == "ACODE-ROL-012"
    assert _live() == before


def test_publishing_one_draft_supersedes_the_other_open_drafts(
    protected: Role, alice: Any, bob: Any
) -> None:
    first, second = _draft_by_api(alice, "First"), _draft_by_api(alice, "Second")
    assert _api(bob).post(f"/api/role-drafts/{second['id']}/publish/").status_code == 200
    response = _api(bob).post(f"/api/role-drafts/{first['id']}/publish/")
    assert response.status_code == 409 and response.json()["code"] == "ACODE-ROL-013"
    assert RoleDraft.objects.get(pk=first["id"]).status == "superseded"


def test_unprotecting_is_a_draft_and_deleting_is_refused(
    protected: Role, alice: Any, bob: Any
) -> None:
    draft = _draft_by_api_data(alice, {"protected": False})
    assert draft["diff"] == [{"field": "protected", "before": True, "after": None}]
    assert Role.objects.get(slug=ROLE).protected is True
    gone = _api(alice).delete(f"/api/roles/{ROLE}/")
    assert gone.status_code == 409 and gone.json()["code"] == "ACODE-ROL-009"
    assert Role.objects.filter(slug=ROLE).exists()
    assert _api(bob).post(f"/api/role-drafts/{draft['id']}/publish/").status_code == 200
    assert Role.objects.get(slug=ROLE).protected is False


def _draft_by_api_data(user: Any, data: dict[str, Any]) -> dict[str, Any]:
    response = _api(user).patch(f"/api/roles/{ROLE}/", data, format="json")
    assert response.status_code == 202, response.content
    body: dict[str, Any] = response.json()
    return body


def test_a_draft_with_a_failing_example_is_refused(protected: Role, alice: Any) -> None:
    wrong = {"tool": "read_file", "arguments": {"path": "a.py"}, "expect": "deny", "why": "no"}
    response = _api(alice).patch(
        f"/api/roles/{ROLE}/", {"examples": [*protected.examples, wrong]}, format="json"
    )
    assert response.status_code == 409 and response.json()["code"] == "ACODE-ROL-008"
    assert not RoleDraft.objects.exists()


def test_unprotected_roles_still_edit_directly(alice: Any) -> None:
    versions = RoleVersion.objects.filter(role_slug=ROLE).count()
    response = _api(alice).patch(f"/api/roles/{ROLE}/", {"description": "Direct"}, format="json")
    assert response.status_code == 200 and response.json()["description"] == "Direct"
    assert RoleVersion.objects.filter(role_slug=ROLE).count() == versions + 1
    assert not RoleDraft.objects.exists()


# -- admin ----------------------------------------------------------------------------------
def test_an_admin_form_edit_becomes_a_draft_another_admin_publishes_in_admin(
    protected: Role, alice: Any, bob: Any
) -> None:
    before = _live()
    form = {**_role_form_data(protected), "protected": "on", "description": "From the form"}
    author = Client()
    author.force_login(alice)
    response = author.post(f"/admin/roles/role/{protected.pk}/change/", form, follow=True)
    draft = RoleDraft.objects.get()
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/admin/roles/roledraft/{draft.pk}/change/"
    assert "is protected: nothing live changed" in page and f"draft #{draft.pk}" in page
    assert "From the form" in page  # the diff
    assert 'name="_publish"' not in page and "ACODE-ROL-010" in page  # not her own
    assert _live() == before
    role_page = author.get(f"/admin/roles/role/{protected.pk}/change/").content.decode()
    assert f"draft #{draft.pk}</a> by alice" in role_page
    # The role's admin history says a draft was made, not that the role changed.
    history = author.get(f"/admin/roles/role/{protected.pk}/history/").content.decode()
    assert f"Drafted #{draft.pk}; nothing live changed." in history
    assert "Changed Description" not in history

    reviewer = Client()
    reviewer.force_login(bob)
    url = f"/admin/roles/roledraft/{draft.pk}/change/"
    assert 'name="_publish"' in reviewer.get(url).content.decode()
    published = reviewer.post(url, {"_publish": "1", "decision_reason": "ok"}, follow=True)
    assert f"Draft #{draft.pk} published" in published.content.decode()
    assert _live()[0] == "From the form" and _live()[2] == "From the form"


def test_a_protected_roles_slug_cannot_change_in_admin(protected: Role, alice: Any) -> None:
    form = {**_role_form_data(protected), "protected": "on", "slug": "renamed"}
    author = Client()
    author.force_login(alice)
    response = author.post(f"/admin/roles/role/{protected.pk}/change/", form)
    assert response.status_code == 200
    assert "a protected role&#x27;s slug cannot change" in response.content.decode()
    assert Role.objects.filter(slug=ROLE).exists() and not RoleDraft.objects.exists()


def test_a_user_without_the_permission_sees_no_publish_button(
    protected: Role, alice: Any, carol: Any
) -> None:
    _draft_by_api(alice)
    draft = RoleDraft.objects.get()
    viewer = Client()
    viewer.force_login(carol)
    page = viewer.get(f"/admin/roles/roledraft/{draft.pk}/change/").content.decode()
    assert 'name="_publish"' not in page and 'name="_reject"' not in page
    refused = viewer.post(f"/admin/roles/roledraft/{draft.pk}/change/", {"_publish": "1"})
    assert refused.status_code == 302 and RoleDraft.objects.get().status == "open"


# -- import ---------------------------------------------------------------------------------
def test_an_import_changing_a_protected_role_makes_a_draft(
    protected: Role, alice: Any, bob: Any
) -> None:
    document = export_definitions()
    assert import_definitions(document, user=alice).drafts == []  # nothing changes
    for role in document["roles"]:
        if role["slug"] == ROLE:
            role["description"] = "Imported"
    before = _live()
    summary = import_definitions(json.loads(json.dumps(document)), user=alice)
    assert len(summary.drafts) == 1 and _live() == before
    draft = RoleDraft.objects.get()
    assert draft.author_name == "alice" and draft.diff[0]["after"] == "Imported"
    assert _api(bob).post(f"/api/role-drafts/{draft.pk}/publish/").status_code == 200
    assert _live()[0] == "Imported"


def test_roles_import_command_says_a_protected_role_change_is_kept_as_a_draft(
    protected: Role, tmp_path: Any
) -> None:
    document = export_definitions()
    for role in document["roles"]:
        if role["slug"] == ROLE:
            role["constraints"] = [*role["constraints"], "Cite the line you review."]
    path = tmp_path / "roles.yaml"
    path.write_text(dump_yaml(document), encoding="utf-8")
    out = StringIO()
    call_command("roles_import", str(path), "--actor", "ci", stdout=out)
    draft = RoleDraft.objects.get()
    assert f"kept as {draft}: the role is protected" in out.getvalue()
    assert draft.author_name == "ci" and [d["field"] for d in draft.diff] == ["constraints"]
    assert "Cite the line you review." not in Role.objects.get(slug=ROLE).constraints
