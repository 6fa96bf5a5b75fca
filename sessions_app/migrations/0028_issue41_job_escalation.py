from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0027_issue40_backlog'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='escalation',
            field=models.JSONField(blank=True, default=dict, help_text="A sub-agent's block on its way up the chain (issue 41): what blocked it, where it came from, and where it went (services.delegation)."),
        ),
    ]
