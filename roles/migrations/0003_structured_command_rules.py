"""Tester's seeded command globs become structured command rules; the network permission."""

from pathlib import Path

import yaml
from django.db import migrations

OLD_TESTER_GLOBS = [
    "pytest",
    "pytest *",
    "python -m pytest",
    "python -m pytest *",
    "python -m unittest",
    "python -m unittest *",
    "make test",
    "npm test",
    "npm test *",
    "go test *",
    "cargo test",
    "cargo test *",
]
SEED = Path(__file__).resolve().parent.parent / "seed" / "acode-standard.yaml"


def forwards(apps, schema_editor):
    Role = apps.get_model("roles", "Role")
    Permission = apps.get_model("roles", "Permission")
    if not Role.objects.exists():
        return  # a fresh database: the seed brings everything after migrate
    seed = yaml.safe_load(SEED.read_text())
    tester = next(r for r in seed["roles"] if r["slug"] == "tester")
    # Only an untouched seeded Tester changes; an admin's own rules are left alone.
    Role.objects.filter(slug="tester", command_patterns=OLD_TESTER_GLOBS).update(
        command_patterns=tester["command_patterns"]
    )
    network = next(p for p in seed["permissions"] if p["code"] == "network")
    Permission.objects.get_or_create(
        code="network", defaults={"description": network["description"]}
    )


class Migration(migrations.Migration):
    dependencies = [("roles", "0002_role_answer_sets_plan_modelendpoint")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
