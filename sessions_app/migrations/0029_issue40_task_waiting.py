from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0028_issue41_job_escalation'),
    ]

    operations = [
        migrations.AddField(
            model_name='backlogtask',
            name='waiting',
            field=models.CharField(blank=True, help_text="Why the scheduler leaves this ready task waiting (the project's room, a full worker queue); empty once it starts.", max_length=300),
        ),
    ]
