"""Issue 33: the audit log's rows, moved here from the sessions app. Their tables exist
already (``db_table`` keeps their names): the models enter this app's state only, and
their content types (which permissions such as ``view_auditevent`` hang on) follow them."""

import django.db.models.deletion
import django.db.models.functions.text
from django.db import migrations, models

MOVED = ("auditevent", "auditchain", "auditanchor", "auditverification")


def _relabel(apps, old, new):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not ContentType.objects.filter(app_label=new, model=model).exists():
            ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def content_types_forward(apps, schema_editor):
    _relabel(apps, "sessions_app", "audit")


def content_types_backward(apps, schema_editor):
    _relabel(apps, "audit", "sessions_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("sessions_app", "0021_issue33_audit_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AuditAnchor',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('seq', models.PositiveBigIntegerField(unique=True)),
                        ('heads', models.JSONField(help_text='{chain: [last seq, last hash]} when the anchor was taken.')),
                        ('created_at', models.DateTimeField()),
                        ('prev_hash', models.CharField(max_length=64)),
                        ('hash', models.CharField(max_length=64)),
                    ],
                    options={
                        'db_table': 'sessions_app_auditanchor',
                        'ordering': ['seq'],
                    },
                ),
                migrations.CreateModel(
                    name='AuditChain',
                    fields=[
                        ('key', models.CharField(max_length=64, primary_key=True, serialize=False)),
                        ('last_seq', models.PositiveBigIntegerField(default=0)),
                        ('last_hash', models.CharField(default='0000000000000000000000000000000000000000000000000000000000000000', max_length=64)),
                        ('anchored_seq', models.PositiveBigIntegerField(default=0, help_text='The last event of this chain an anchor has sealed.')),
                    ],
                    options={
                        'db_table': 'sessions_app_auditchain',
                    },
                ),
                migrations.CreateModel(
                    name='AuditVerification',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('ok', models.BooleanField()),
                        ('checked', models.PositiveBigIntegerField()),
                        ('chain', models.CharField(blank=True, max_length=64)),
                        ('first_bad_seq', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('first_bad_id', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('problem', models.TextField(blank=True)),
                        ('actor', models.CharField(max_length=150)),
                        ('verified_at', models.DateTimeField(db_index=True)),
                    ],
                    options={
                        'db_table': 'sessions_app_auditverification',
                        'ordering': ['-verified_at'],
                    },
                ),
                migrations.CreateModel(
                    name='AuditEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('chain', models.CharField(max_length=64)),
                        ('seq', models.PositiveBigIntegerField(help_text='Position in its chain, from 1.')),
                        ('event_type', models.CharField(choices=[('SessionCreated', 'Session created'), ('SessionUpdated', 'Session details changed'), ('RoleTransition', 'Role changed'), ('TransitionDenied', 'Role change refused'), ('ToolDecision', 'Tool call allowed, recorded before it runs'), ('RoleAction', 'Tool call executed in a role'), ('ToolDenied', 'Tool call refused in a role'), ('ToolConsent', 'Tool call put to a person: asked, answered or timed out'), ('PlanUpdated', "Plan set or a step's status changed"), ('ChangeRecorded', 'Pending file change recorded'), ('ChangesApproved', 'Pending changes approved and cleared'), ('RoleEdited', 'Role definition changed (new role version)'), ('RoleDataChanged', 'Role, rule, tool, permission or prompt saved or deleted'), ('PromptRejected', 'Dangerous prompt text refused'), ('JobEvent', 'Inference job lifecycle'), ('RunEvent', 'Orchestrated run started, moved to a stage, paused or ended'), ('RunDecision', 'A person answered, approved, rejected or cancelled a run'), ('BranchPushed', "Approved work pushed to the repository's remote, or refused"), ('SecretRuleChanged', "A team's secret rule added, changed or removed")], max_length=40)),
                        ('role', models.CharField(blank=True, max_length=64)),
                        ('actor', models.CharField(max_length=150)),
                        ('target', models.CharField(blank=True, max_length=1000)),
                        ('result', models.CharField(blank=True, max_length=200)),
                        ('details', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(db_index=True)),
                        ('prev_hash', models.CharField(max_length=64)),
                        ('hash', models.CharField(max_length=64)),
                        ('session', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='audit_events', to='sessions_app.agentsession')),
                    ],
                    options={
                        'db_table': 'sessions_app_auditevent',
                        'ordering': ['id'],
                        'indexes': [models.Index(fields=['session', 'id'], name='audit_session_id_idx'), models.Index(fields=['event_type', 'id'], name='audit_type_id_idx'), models.Index(fields=['actor', 'id'], name='audit_actor_id_idx'), models.Index(django.db.models.functions.text.Upper('role'), models.F('id'), name='audit_role_upper_id_idx'), models.Index(fields=['id', 'created_at'], name='audit_id_created_idx')],
                        'constraints': [models.UniqueConstraint(fields=('chain', 'seq'), name='unique_audit_chain_seq')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_forward, content_types_backward),
    ]
