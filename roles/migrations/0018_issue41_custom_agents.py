"""Issue 41: custom agents (a role's ``custom`` flag, who made which) and the ``spawn`` and
``configure`` permissions (seed 004's names), and the rows of the ``delegate`` and
``collect`` tools (declared in code, needing ``spawn``). A fresh database gets the permissions from
the seed after migrate; an existing one gets them here, held by no role: nobody gains
anything."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

PERMISSIONS = {
    "spawn": "Hand sub-tasks to sub-agents in the same or a narrower role (the delegate tool)",
    "configure": "Create and change agents' configuration (custom agents); never inherited "
    "by default",
}


def forwards(apps, schema_editor):
    Role = apps.get_model("roles", "Role")
    Permission = apps.get_model("roles", "Permission")
    if not Role.objects.exists():
        return  # a fresh database: the seed brings everything after migrate
    for code, description in PERMISSIONS.items():
        Permission.objects.get_or_create(code=code, defaults={"description": description})
    Tool = apps.get_model("roles", "Tool")
    for name in ("collect", "delegate"):  # need spawn, which no role holds yet
        Tool.objects.get_or_create(name=name, defaults={"enabled": True})


class Migration(migrations.Migration):
    dependencies = [
        ("roles", "0017_issue39_reasoning_effort"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="role",
            name="custom",
            field=models.BooleanField(
                default=False,
                editable=False,
                help_text="A custom agent (made by a user): never holds write, execute or "
                "network permissions, and stays custom.",
            ),
        ),
        migrations.AddField(
            model_name="role",
            name="max_sub_agents",
            field=models.PositiveSmallIntegerField(
                default=4, help_text="How many sub-agents one job in this role may start (needs spawn)."
            ),
        ),
        migrations.AddField(
            model_name="role",
            name="max_delegation_depth",
            field=models.PositiveSmallIntegerField(
                default=2, help_text="How many levels of sub-agents may go below a job in this role."
            ),
        ),
        migrations.CreateModel(
            name="CustomAgent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("template_slug", models.SlugField(max_length=64)),
                ("created_by_name", models.CharField(max_length=150)),
                ("routing_keywords", models.JSONField(blank=True, default=list)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("created_by", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
                ("role", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="agent", to="roles.role")),
                ("template", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="roles.role")),
            ],
            options={
                "ordering": ["-created_at"],
                "permissions": [("configure", "May create custom agents (read-only roles)")],
            },
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
