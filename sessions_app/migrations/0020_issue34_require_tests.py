"""Issue 34: a workflow template may require passing tests before a run can pass (empty:
by the run's tier, ACODE_RUN_REQUIRE_TESTS_TIERS)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0019_issue37_tool_consents"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflowtemplate",
            name="require_tests",
            field=models.BooleanField(
                blank=True,
                help_text="A run passes only when its tests passed (each plan step's last test "
                "stage). Empty: by the run's tier (ACODE_RUN_REQUIRE_TESTS_TIERS, medium and "
                "high).",
                null=True,
            ),
        ),
    ]
