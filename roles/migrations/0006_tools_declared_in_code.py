"""A tool's argument schema and required permissions are declared in code (roles.tools);
its row keeps what admins decide: enabled, description and position."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("roles", "0005_model_endpoint_schema_format")]

    operations = [
        migrations.RemoveField(model_name="tool", name="required_permissions"),
        migrations.RemoveField(model_name="tool", name="argument_schema"),
        migrations.AddField(
            model_name="tool",
            name="position",
            field=models.PositiveIntegerField(
                default=0, help_text="Order in lists and in what the model is offered."
            ),
        ),
        migrations.AlterField(
            model_name="tool",
            name="description",
            field=models.CharField(
                blank=True,
                help_text="Shown to the model; empty: the tool's own.",
                max_length=255,
            ),
        ),
        migrations.AlterModelOptions(name="tool", options={"ordering": ["position", "name"]}),
    ]
