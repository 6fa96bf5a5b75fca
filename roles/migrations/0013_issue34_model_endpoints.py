"""Issue 34: a scripted endpoint needs no model name; an endpoint may have a price per
million tokens (the usage page's cost column)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("roles", "0012_issue37_account_grants_and_tester"),
    ]

    operations = [
        migrations.AlterField(
            model_name="modelendpoint",
            name="model",
            field=models.CharField(
                blank=True,
                help_text="OpenAI-compatible kind: the model name sent to the server.",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="modelendpoint",
            name="input_price",
            field=models.DecimalField(
                blank=True,
                decimal_places=4,
                help_text="Price per million input (prompt) tokens; empty: no cost shown.",
                max_digits=12,
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="modelendpoint",
            name="output_price",
            field=models.DecimalField(
                blank=True,
                decimal_places=4,
                help_text="Price per million output (completion) tokens; empty: no cost shown.",
                max_digits=12,
                null=True,
            ),
        ),
    ]
