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


def test_an_untouched_seeded_tester_gets_the_new_rules_and_examples() -> None:
    Role.objects.filter(slug="tester").update(
        command_patterns=MIGRATION.OLD_TESTER_RULES, examples=MIGRATION.OLD_TESTER_EXAMPLES
    )
    MIGRATION.tester_forwards(apps, None)
    tester = Role.objects.get(slug="tester")
    seeded = _seeded_tester()
    assert tester.command_patterns == seeded["command_patterns"]
    assert tester.examples == seeded["examples"]


def test_a_tester_an_admin_changed_keeps_its_rules_and_examples() -> None:
    own = [{"program": "pytest", "args": "paths"}]
    Role.objects.filter(slug="tester").update(command_patterns=own, examples=[])
    MIGRATION.tester_forwards(apps, None)
    tester = Role.objects.get(slug="tester")
    assert (tester.command_patterns, tester.examples) == (own, [])  # no example that would fail
