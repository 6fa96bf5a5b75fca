"""Issue 37: who created an account or gave it rights (a draft's author's own accounts do
not publish it); the seeded Tester accepts its test runners' common options (``pytest -qx
-vv -rA``, ``python -m unittest discover -s tests -p "test_*.py"``), shown in its rules'
examples. Only an untouched seeded Tester changes; an admin's own rules are left alone."""

from pathlib import Path

import django.db.models.deletion
import yaml
from django.conf import settings
from django.db import migrations, models

SEED = Path(__file__).resolve().parent.parent / "seed" / "acode-standard.yaml"
# The seeded Tester's rules as 0003 left them.
OLD_TESTER_RULES = [{'program': 'pytest', 'options': {'-q': None, '-v': None, '-x': None, '-s': None, '-k': 'text', '-m': 'text', '--maxfail': 'int', '--tb': ['auto', 'short', 'long', 'line', 'native', 'no'], '--lf': None, '--ff': None, '--no-header': None}, 'args': 'paths'}, {'program': 'python', 'module': 'pytest', 'options': {'-q': None, '-v': None, '-x': None, '-s': None, '-k': 'text', '-m': 'text', '--maxfail': 'int', '--tb': ['auto', 'short', 'long', 'line', 'native', 'no'], '--lf': None, '--ff': None, '--no-header': None}, 'args': 'paths', 'examples': [{'name': 'the Tester runs the test suite', 'argv': ['python', '-m', 'pytest', '-q', 'tests'], 'expect': 'allow', 'why': "Running tests is the Tester's job."}, {'name': 'the Tester runs only test commands', 'argv': ['python', '-c', 'import os'], 'expect': 'deny', 'why': 'Python runs only as python -m pytest here, never arbitrary code.'}, {'name': 'no plugins the rule does not name', 'argv': ['python', '-m', 'pytest', '-p', 'evil'], 'expect': 'deny', 'why': 'A pytest plugin is code the rule never allowed.'}, {'name': 'no shell', 'argv': ['sh', '-c', 'rm -rf .'], 'expect': 'deny', 'why': 'The Tester runs test commands only.'}]}, {'program': 'python', 'module': 'unittest', 'options': {'-v': None, '-q': None, '-f': None, '-k': 'text'}, 'args': 'text'}, {'program': 'make', 'subcommands': ['test']}, {'program': 'npm', 'subcommands': ['test']}, {'program': 'go', 'subcommands': ['test'], 'options': {'-v': None, '-run': 'text'}, 'args': 'paths'}, {'program': 'cargo', 'subcommands': ['test'], 'options': {'-q': None}, 'args': 'text'}]


def tester_forwards(apps, schema_editor):
    Role = apps.get_model("roles", "Role")
    tester = Role.objects.filter(slug="tester").first()
    if tester is None:
        return  # a fresh database: the seed brings everything after migrate
    seed = yaml.safe_load(SEED.read_text())
    new = next(r for r in seed["roles"] if r["slug"] == "tester")
    if tester.command_patterns == OLD_TESTER_RULES:  # its rules carry their examples
        tester.command_patterns = new["command_patterns"]
        tester.save(update_fields=["command_patterns"])


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("roles", "0010_mcp_registration_hygiene"),
    ]

    operations = [
        migrations.CreateModel(
            name="AccountGrant",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("granted_by_name", models.CharField(max_length=150)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("created", "created the account"),
                            ("staff", "made it staff"),
                            ("superuser", "made it a superuser"),
                            ("permissions", "changed its permissions or groups"),
                        ],
                        max_length=20,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "account",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="grants_received",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "granted_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["granted_by", "account"], name="grant_by_account")],
            },
        ),
        migrations.RunPython(tester_forwards, migrations.RunPython.noop),
    ]
