"""The ask_human permission and tool (the Coder holds it); Explorer may hand over to
Coder once there is a plan (the high-risk workflow: Planner → Explorer → Coder)."""

from pathlib import Path

import yaml
from django.db import migrations

SEED = Path(__file__).resolve().parent.parent / "seed" / "acode-standard.yaml"


def forwards(apps, schema_editor):
    Role = apps.get_model("roles", "Role")
    Permission = apps.get_model("roles", "Permission")
    Tool = apps.get_model("roles", "Tool")
    TransitionRule = apps.get_model("roles", "TransitionRule")
    if not Role.objects.exists():
        return  # a fresh database: the seed brings everything after migrate
    seed = yaml.safe_load(SEED.read_text())
    spec = next(p for p in seed["permissions"] if p["code"] == "ask_human")
    permission, _ = Permission.objects.get_or_create(
        code="ask_human", defaults={"description": spec["description"]}
    )
    # The seed no longer holds the tool's schema (declared in code since 0006).
    tool, created = Tool.objects.get_or_create(name="ask_human", defaults={"enabled": True})
    if created:
        tool.required_permissions.add(permission)
    for role in Role.objects.filter(slug="coder"):
        role.permissions.add(permission)
        if role.allowed_tools.exists():  # an allow-list: ask_human joins it
            role.allowed_tools.add(tool)
    explorer = Role.objects.filter(slug="explorer").first()
    coder = Role.objects.filter(slug="coder").first()
    if explorer and coder:
        TransitionRule.objects.get_or_create(
            from_role=explorer,
            to_role=coder,
            defaults={
                "precondition": "plan_exists",
                "explanation": (
                    "Coder role requires a plan to follow. Create one in Planner role first."
                ),
            },
        )


class Migration(migrations.Migration):
    dependencies = [("roles", "0003_structured_command_rules")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
