"""Layered prompts: system, role, language(s), framework(s), constraints, each pack layer
within its budget; existing databases get the shipped layers through a data migration."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from roles.models import PromptComponent, PromptPack
from roles.prompts import LAYER_BUDGETS, compose_prompt

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("roles.migrations.0014_issue42_language_framework_prompts")
SHIPPED = [
    "languages/python", "languages/javascript", "languages/typescript", "languages/go",
    "languages/java", "languages/csharp", "frameworks/django", "frameworks/react",
    "frameworks/aspnetcore",
]  # fmt: skip


def test_coder_prompt_composes_layers_in_the_stated_order() -> None:
    composed = compose_prompt("coder", languages=["csharp"], frameworks=["aspnetcore"])
    assert composed.components == [
        "system", "roles/coder", "languages/csharp", "frameworks/aspnetcore", "constraints",
    ]  # fmt: skip
    text = composed.text
    order = ["coding agent working inside acode", "You are the Coder agent",
             "The workspace uses C#.", "The project uses ASP.NET Core.", "## Role in force: Coder"]  # fmt: skip
    assert [text.index(marker) for marker in order] == sorted(text.index(m) for m in order)
    assert [p.layer for p in composed.parts] == [
        "system", "role", "language", "framework", "constraints",
    ]  # fmt: skip
    assert all(p.tokens > 0 and not p.cut for p in composed.parts)
    assert composed.parts[2].origin == "pack acode-standard"
    assert composed.parts[-1].origin == "generated from the role"


def test_the_standard_pack_ships_every_language_and_framework_layer() -> None:
    keys = set(
        PromptComponent.objects.filter(pack__name="acode-standard").values_list("key", flat=True)
    )
    assert set(SHIPPED) <= keys
    for key in SHIPPED:
        composed = compose_prompt("coder", languages=[key.split("/")[1]] if key.startswith("lang") else [],
                                  frameworks=[key.split("/")[1]] if key.startswith("frame") else [])  # fmt: skip
        assert key in composed.components and not composed.notes


def test_a_layer_the_pack_lacks_is_left_out_and_said() -> None:
    composed = compose_prompt("coder", languages=["cobol", "python"])
    assert composed.components == ["system", "roles/coder", "languages/python", "constraints"]
    assert "Pack 'acode-standard' has no language layer for 'cobol'." in composed.notes


def test_a_layer_over_its_budget_is_cut_and_says_so() -> None:
    pack = PromptPack.objects.get(name="acode-standard")
    long = "\n".join(f"- Python rule number {i}: keep it tidy." for i in range(400))
    PromptComponent.objects.filter(pack=pack, key="languages/python").update(content=long)
    composed = compose_prompt("coder", languages=["python"])
    part = next(p for p in composed.parts if p.key == "languages/python")
    assert part.cut and part.tokens <= LAYER_BUDGETS["language"]
    assert "[… layer cut to its budget of 400 tokens]" in composed.text
    assert "Python rule number 399" not in composed.text
    assert "'languages/python' is over its 400-token budget; cut." in composed.notes
    assert "## Role in force: Coder" in composed.text  # the constraints are never cut


def test_an_existing_pack_gains_the_layers_and_keeps_an_admins_own() -> None:
    pack = PromptPack.objects.get(name="acode-standard")
    PromptComponent.objects.filter(pack=pack, key__startswith="languages/").delete()
    PromptComponent.objects.filter(pack=pack, key="frameworks/django").update(
        content="Our Django way."
    )
    MIGRATION.forwards(apps, None)
    keys = set(pack.components.values_list("key", flat=True))
    assert set(SHIPPED) <= keys
    assert pack.components.get(key="frameworks/django").content == "Our Django way."
