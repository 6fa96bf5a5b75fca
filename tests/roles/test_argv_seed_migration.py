"""The data migration brings a seeded Tester nobody changed up to the new rules and
examples (its runners' common options), and leaves an admin's own rules alone."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps

from roles.models import Role
from roles.portability.definitions import SEED_FILE
from roles.portability.document import load_yaml

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("roles.migrations.0012_issue37_account_grants_and_tester")


def _seeded_tester() -> dict[str, Any]:
    roles = load_yaml(SEED_FILE.read_text())["roles"]
    tester: dict[str, Any] = next(r for r in roles if r["slug"] == "tester")
    return tester


def test_an_untouched_seeded_tester_gets_the_new_rules_and_their_examples() -> None:
    Role.objects.filter(slug="tester").update(command_patterns=MIGRATION.OLD_TESTER_RULES)
    MIGRATION.tester_forwards(apps, None)
    tester = Role.objects.get(slug="tester")
    assert tester.command_patterns == _seeded_tester()["command_patterns"]
    shown = str([r.get("examples") for r in tester.command_patterns])
    assert "-qx" in shown and "discover" in shown


def test_a_tester_an_admin_changed_keeps_its_rules() -> None:
    own = [{"program": "pytest", "args": "paths"}]
    Role.objects.filter(slug="tester").update(command_patterns=own)
    MIGRATION.tester_forwards(apps, None)
    assert Role.objects.get(slug="tester").command_patterns == own
