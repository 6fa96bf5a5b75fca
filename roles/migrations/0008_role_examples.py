"""A role carries examples: calls it must allow or deny, checked on every save."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("roles", "0007_mcp_servers")]

    operations = [
        migrations.AddField(
            model_name="role",
            name="examples",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Calls the role must allow or deny, checked on every save "
                "(roles.commands.examples).",
            ),
        ),
    ]
