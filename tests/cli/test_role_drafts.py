"""``acode role drafts|publish|reject`` against a live server: the author cannot publish
their own draft; another admin with roles.publish_roledraft can."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token

from roles.models import Role
from roles.services import role_write
from tests.cli.conftest import RunCli, make_runner

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_draft_is_listed_refused_to_its_author_and_published_by_another_admin(
    live_server: Any, admin_user: Any, django_user_model: Any, tmp_path: Path
) -> None:
    role_write(data={"protected": True}, create=False, slug="reviewer", actor="test")
    draft = role_write(
        data={"description": "Reviewed by two"}, create=False, slug="reviewer", user=admin_user
    ).draft
    assert draft is not None
    author: RunCli = make_runner(
        live_server.url, Token.objects.create(user=admin_user).key, tmp_path / "a"
    )
    listed = author("role", "drafts", "--status", "open")
    assert listed.exit_code == 0, listed.output
    assert f"#{draft.pk} reviewer on v" in listed.stdout and "open, by boss" in listed.stdout
    assert 'description: "' in listed.stdout and '"Reviewed by two"' in listed.stdout

    own = author("role", "publish", str(draft.pk))
    assert own.exit_code == 5 and "ACODE-ROL-010" in own.stderr
    assert Role.objects.get(slug="reviewer").description != "Reviewed by two"

    bob = django_user_model.objects.create_user("bob", password="pw-bob-123", is_staff=True)
    bob.user_permissions.set(Permission.objects.filter(codename="publish_roledraft"))
    other = make_runner(live_server.url, Token.objects.create(user=bob).key, tmp_path / "b")
    done = other("role", "publish", str(draft.pk), "--reason", "Checked")
    assert done.exit_code == 0, done.output
    assert f"[SUCCESS] Draft #{draft.pk} published." in done.stdout
    assert Role.objects.get(slug="reviewer").description == "Reviewed by two"
    again = other("role", "reject", str(draft.pk))
    assert again.exit_code == 4 and "ACODE-ROL-013" in again.stderr
