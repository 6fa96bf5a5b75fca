"""Issue 38: the search tools (``semantic_search``, ``search_code``, ``find_references``),
declared in code (roles.tools) with the ``read_files`` permission, get their rows, enabled;
the seeded Planner's allow-list gains them. Roles without an allow-list get them through
``read_files``, which they hold already: no role gains a permission."""

from django.db import migrations

SEARCH_TOOLS = ("find_references", "search_code", "semantic_search")
# The seeded Planner's allow-list before this migration.
OLD_PLANNER_TOOLS = {"grep_search", "list_directory", "read_file"}


def forwards(apps, schema_editor):
    Role = apps.get_model("roles", "Role")
    Tool = apps.get_model("roles", "Tool")
    if not Role.objects.exists():
        return  # a fresh database: the seed brings everything after migrate
    tools = [Tool.objects.get_or_create(name=name, defaults={"enabled": True})[0]
             for name in SEARCH_TOOLS]  # fmt: skip
    planner = Role.objects.filter(slug="planner").first()
    if planner is not None:
        held = set(planner.allowed_tools.values_list("name", flat=True))
        if held == OLD_PLANNER_TOOLS:  # untouched by an admin: it reads, so it searches
            planner.allowed_tools.add(*tools)


class Migration(migrations.Migration):
    dependencies = [("roles", "0014_issue42_language_framework_prompts")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
