"""Issue 33: the audit log's rows move to the ``audit`` app (below both apps). Their tables
stay as they are (``db_table``): only Django's idea of which app owns them changes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0020_issue34_require_tests"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name="AuditAnchor",
                ),
                migrations.DeleteModel(
                    name="AuditChain",
                ),
                migrations.RemoveField(
                    model_name="auditevent",
                    name="session",
                ),
                migrations.DeleteModel(
                    name="AuditVerification",
                ),
                migrations.DeleteModel(
                    name="AuditEvent",
                ),
            ],
            database_operations=[],
        ),
    ]
