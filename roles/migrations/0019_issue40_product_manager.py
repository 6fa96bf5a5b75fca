"""Issue 40: the Product Manager. The ``propose_tasks`` permission, the row of the
``propose_backlog`` tool (declared in code, needing it), the seeded ``product-manager`` role
(read-only like the Planner, holding ``propose_tasks``), the rule from Default into it and
its prompt. A fresh database gets them from the seed after migrate; an existing one here,
from the same seed entries. No existing role gains anything."""

from pathlib import Path

import yaml
from django.db import migrations

SEED = Path(__file__).resolve().parent.parent / "seed" / "acode-standard.yaml"
SLUG = "product-manager"
SCALARS = (
    "name", "description", "colour", "capabilities", "constraints", "prompt_key",
    "context_strategy", "preferred_model", "fallback_model", "queue", "max_llm_calls",
    "max_tokens", "timeout_seconds", "write_paths", "command_patterns", "answer_sets_plan",
    "examples",
)  # fmt: skip


def forwards(apps, schema_editor):
    Role = apps.get_model("roles", "Role")
    if not Role.objects.exists():
        return  # a fresh database: the seed brings everything after migrate
    seed = yaml.safe_load(SEED.read_text())
    Permission = apps.get_model("roles", "Permission")
    Tool = apps.get_model("roles", "Tool")
    described = {p["code"]: p["description"] for p in seed["permissions"]}
    Permission.objects.get_or_create(
        code="propose_tasks", defaults={"description": described["propose_tasks"]}
    )
    Tool.objects.get_or_create(name="propose_backlog", defaults={"enabled": True})
    entry = next(r for r in seed["roles"] if r["slug"] == SLUG)
    if Role.objects.filter(slug=SLUG).exists() or Role.objects.filter(name=entry["name"]).exists():
        return  # an admin made one already: theirs stays
    role = Role.objects.create(slug=SLUG, **{k: entry[k] for k in SCALARS})
    role.permissions.set(Permission.objects.filter(code__in=entry["permissions"]))
    role.allowed_tools.set(Tool.objects.filter(name__in=entry["allowed_tools"]))
    default = Role.objects.filter(slug="default").first()
    if default is not None:
        apps.get_model("roles", "TransitionRule").objects.get_or_create(
            from_role=default, to_role=role, defaults={"precondition": "none"}
        )
    pack = apps.get_model("roles", "PromptPack").objects.filter(name="acode-standard").first()
    if pack is not None:
        key = f"roles/{SLUG}"
        content = next(
            c["content"] for p in seed["prompt_packs"] for c in p["components"] if c["key"] == key
        )
        apps.get_model("roles", "PromptComponent").objects.get_or_create(
            pack=pack, key=key, defaults={"content": content}
        )


class Migration(migrations.Migration):
    dependencies = [("roles", "0018_issue41_custom_agents")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
