"""Issue 39: risk as seed 002 scores it (a signal's score points and whether it is a
sensitive tag or path, the run's score, the autonomy signal), a template's final review of
the whole change (the shipped high template has one), and the reasoning effort a stage's
jobs were sent. The shipped signals get their scores, and a database that has them gets
the autonomy signal."""

from django.db import migrations, models

# The shipped signals' (score, sensitive), as ``services/runs/seed.py`` writes them.
SHIPPED = {
    "auth-paths": (3, True),
    "secret-paths": (3, True),
    "migration-paths": (2, True),
    "settings-paths": (1, True),
    "ci-paths": (2, True),
    "dependency-files": (1, True),
    "security-words": (2, True),
    "schema-words": (1, False),
    "large-plan": (1, False),
    "very-large-plan": (2, False),
    "earlier-failures": (1, False),
}
UNATTENDED = {
    "name": "unattended",
    "description": "Autonomy mode: the run commits without a person approving",
    "kind": "unattended",
    "tier": "low",
    "score": 1,
}


def score_shipped(apps, schema_editor):
    RiskSignal = apps.get_model("sessions_app", "RiskSignal")
    if not RiskSignal.objects.exists():
        return  # an empty database: the seed writes them with their scores
    for name, (score, sensitive) in SHIPPED.items():
        RiskSignal.objects.filter(name=name).update(score=score, sensitive=sensitive)
    if not RiskSignal.objects.filter(name=UNATTENDED["name"]).exists():
        RiskSignal.objects.create(**UNATTENDED)


def high_template_final_review(apps, schema_editor):
    WorkflowTemplate = apps.get_model("sessions_app", "WorkflowTemplate")
    WorkflowTemplate.objects.filter(slug="high").update(final_review=True)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0023_issue39_reassign_and_reviewer"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflowtemplate",
            name="final_review",
            field=models.BooleanField(
                default=False,
                help_text="After the last plan step's review approves, the Reviewer reviews the whole change once more, with the request and every step's acceptance criteria.",
            ),
        ),
        migrations.AddField(
            model_name="risksignal",
            name="score",
            field=models.PositiveSmallIntegerField(
                default=0,
                help_text="Points a firing adds to the run's risk score: the declared tier's points (low 0, medium 3, high 6) plus every fired signal's; 3 or more is medium, 6 high.",
            ),
        ),
        migrations.AddField(
            model_name="risksignal",
            name="sensitive",
            field=models.BooleanField(
                default=False,
                help_text="A sensitive tag or path: when it fires, a medium-risk run needs approval too.",
            ),
        ),
        migrations.AlterField(
            model_name="risksignal",
            name="tier",
            field=models.CharField(
                choices=[("low", "Low"), ("medium", "Medium"), ("high", "High")],
                help_text="The run's tier is at least this when the signal fires.",
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="risksignal",
            name="kind",
            field=models.CharField(
                choices=[
                    ("request_keyword", "A word in the request"),
                    ("path_glob", "A path the plan names or the changes touch"),
                    ("plan_steps", "The plan has at least N steps"),
                    ("failed_runs", "The session had at least N failed or blocked runs"),
                    ("unattended", "Autonomy: the run's template commits without a person approving"),
                ],
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="risk_score",
            field=models.PositiveSmallIntegerField(
                default=0, help_text="The declared tier's points plus every fired signal's score."
            ),
        ),
        migrations.AddField(
            model_name="runstage",
            name="reasoning_effort",
            field=models.CharField(
                blank=True, help_text="The role's reasoning effort its jobs were sent.", max_length=10
            ),
        ),
        migrations.RunPython(score_shipped, migrations.RunPython.noop),
        migrations.RunPython(high_template_final_review, migrations.RunPython.noop),
    ]
