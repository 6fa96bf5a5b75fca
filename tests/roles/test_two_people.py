"""Two people are two people: an account a draft's author created, or gave admin rights,
through admin cannot publish that author's drafts of a protected role; a person the
author did not make can."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from roles.models import AccountGrant, Role, RoleDraft

pytestmark = pytest.mark.django_db

ROLE = "reviewer"


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _admin_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _create_account_in_admin(admin: Client, username: str) -> User:
    """What a superuser does in admin: add a user, then make it a superuser."""
    password = "a-Long-passw0rd-for-tests"
    response = admin.post(
        "/admin/auth/user/add/",
        {"username": username, "password1": password, "password2": password,
         "usable_password": "true"},
    )  # fmt: skip
    assert response.status_code == 302, response.content[:2000]
    account = User.objects.get(username=username)
    response = admin.post(
        f"/admin/auth/user/{account.pk}/change/",
        {"username": username, "is_active": "on", "is_staff": "on", "is_superuser": "on",
         "date_joined_0": "2026-11-28", "date_joined_1": "10:00:00",
         "initial-date_joined_0": "2026-11-28", "initial-date_joined_1": "10:00:00"},
    )  # fmt: skip
    assert response.status_code == 302, response.content[:2000]
    account.refresh_from_db()
    assert account.is_superuser and account.is_staff
    return account


def _draft(author: Any) -> int:
    api = _api(author)
    assert api.patch(f"/api/roles/{ROLE}/", {"protected": True}, format="json").status_code == 200
    response = api.patch(f"/api/roles/{ROLE}/", {"description": "Mine"}, format="json")
    assert response.status_code == 202, response.content
    return int(response.json()["id"])


def test_an_account_the_author_created_and_promoted_cannot_publish_the_authors_draft(
    django_user_model: Any,
) -> None:
    root = django_user_model.objects.create_superuser("root", "root@x.io", "pw-root-1")
    second = _create_account_in_admin(_admin_client(root), "root2")
    kinds = set(AccountGrant.objects.filter(account=second).values_list("kind", flat=True))
    assert kinds == {"created", "staff", "superuser"}
    assert all(g.granted_by_id == root.pk for g in AccountGrant.objects.filter(account=second))
    draft = _draft(root)

    response = _api(second).post(f"/api/role-drafts/{draft}/publish/", {}, format="json")
    assert response.status_code == 403, response.content
    body = response.json()
    assert body["code"] == "ACODE-ROL-010"
    assert "who created your account or gave it its rights" in body["message"]
    assert RoleDraft.objects.get(pk=draft).status == "open"
    assert Role.objects.get(slug=ROLE).description != "Mine"

    # Nor through an account that account made in turn.
    third = _create_account_in_admin(_admin_client(second), "root3")
    response = _api(third).post(f"/api/role-drafts/{draft}/publish/", {}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "ACODE-ROL-010"

    # A person the author did not make publishes it.
    other = django_user_model.objects.create_superuser("other", "o@x.io", "pw-other-1")
    response = _api(other).post(f"/api/role-drafts/{draft}/publish/", {}, format="json")
    assert response.status_code == 200, response.content
    assert Role.objects.get(slug=ROLE).description == "Mine"


def test_the_admin_page_of_a_draft_offers_no_publish_button_to_the_authors_account(
    django_user_model: Any,
) -> None:
    root = django_user_model.objects.create_superuser("root", "root@x.io", "pw-root-1")
    second = _create_account_in_admin(_admin_client(root), "root2")
    draft = _draft(root)
    page = _admin_client(second).get(f"/admin/roles/roledraft/{draft}/change/")
    assert page.status_code == 200
    assert b"who created your account" in page.content
    assert b'name="_publish"' not in page.content
