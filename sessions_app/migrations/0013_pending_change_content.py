from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0012_session_search_trigrams")]

    operations = [
        migrations.AddField(
            model_name="pendingchange",
            name="content",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="pendingchange",
            name="mode",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="pendingchange",
            name="content_recorded",
            field=models.BooleanField(
                default=False,
                help_text="Written by a tool (content above); false for a change described by "
                "hand, which approval does not commit.",
            ),
        ),
    ]
