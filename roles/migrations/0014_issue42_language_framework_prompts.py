"""Issue 42: the standard prompt pack gains language layers (Python, JavaScript,
TypeScript, Go, Java, C#) and framework layers (Django, React, ASP.NET Core). An existing
pack gets the layers it lacks from the seed; a component an admin already keyed the same
way is left as it is, and so is a description an admin changed."""

from pathlib import Path

import yaml
from django.db import migrations

SEED = Path(__file__).resolve().parent.parent / "seed" / "acode-standard.yaml"
LAYER_PREFIXES = ("languages/", "frameworks/")
OLD_DESCRIPTION = "The prompts acode ships with, one per seeded role."


def forwards(apps, schema_editor):
    PromptPack = apps.get_model("roles", "PromptPack")
    PromptComponent = apps.get_model("roles", "PromptComponent")
    seed = yaml.safe_load(SEED.read_text())
    for spec in seed["prompt_packs"]:
        pack = PromptPack.objects.filter(name=spec["name"]).first()
        if pack is None:
            continue  # a fresh database: the seed brings everything after migrate
        if pack.description == OLD_DESCRIPTION:
            pack.description = spec["description"]
            pack.save(update_fields=["description"])
        for component in spec["components"]:
            if component["key"].startswith(LAYER_PREFIXES):
                PromptComponent.objects.get_or_create(
                    pack=pack, key=component["key"], defaults={"content": component["content"]}
                )


class Migration(migrations.Migration):
    dependencies = [
        ("roles", "0013_issue34_model_endpoints"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
