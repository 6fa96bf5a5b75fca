"""Issue 39: a role's reasoning effort (low, medium, high; empty: not sent), sent to model
servers that take the OpenAI-compatible request's reasoning_effort."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("roles", "0016_issue39_reassign_models"),
    ]

    operations = [
        migrations.AddField(
            model_name="role",
            name="reasoning_effort",
            field=models.CharField(
                blank=True,
                choices=[("low", "Low"), ("medium", "Medium"), ("high", "High")],
                help_text="How hard the model should think, sent as the OpenAI-compatible request's reasoning_effort to servers that take it; empty: not sent (the server's default).",
                max_length=10,
            ),
        ),
    ]
