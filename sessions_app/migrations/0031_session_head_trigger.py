"""A session's audit chain head moves with the event, in the database.

An event of a session's chain (``AuditEvent.session`` set) moves the head on the session's
own row (``AgentSession.audit_seq``/``audit_hash``) in the statement that inserts it: no
event can be written without moving the head, and the write costs one round trip, not
two (an outside agent's hook writes one on every tool call). The head only moves forward,
so rows written in bulk with their heads already set (``acode_generate_data``) leave it.
"""

from django.db import migrations

UPDATE = (
    "UPDATE sessions_app_agentsession SET audit_seq = NEW.seq, audit_hash = NEW.hash "
    "WHERE id = NEW.session_id AND audit_seq < NEW.seq;"
)
FORWARD = {
    "postgresql": [
        "CREATE FUNCTION acode_session_head_moves() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN {UPDATE} RETURN NULL; END $$;",
        "CREATE TRIGGER acode_session_head_moves AFTER INSERT ON sessions_app_auditevent "
        "FOR EACH ROW WHEN (NEW.session_id IS NOT NULL) "
        "EXECUTE FUNCTION acode_session_head_moves();",
    ],
    "sqlite": [
        "CREATE TRIGGER acode_session_head_moves AFTER INSERT ON sessions_app_auditevent "
        f"FOR EACH ROW WHEN NEW.session_id IS NOT NULL BEGIN {UPDATE} END;",
    ],
}
BACKWARD = {
    "postgresql": [
        "DROP TRIGGER IF EXISTS acode_session_head_moves ON sessions_app_auditevent;",
        "DROP FUNCTION IF EXISTS acode_session_head_moves();",
    ],
    "sqlite": ["DROP TRIGGER IF EXISTS acode_session_head_moves;"],
}


def _run(statements: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def run(apps, schema_editor):  # type: ignore[no-untyped-def]
        vendor = schema_editor.connection.vendor
        if vendor not in statements:
            raise NotImplementedError(f"acode runs on PostgreSQL or SQLite, not {vendor}")
        for statement in statements[vendor]:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0030_issue40_product_manager"),
        ("audit", "0003_issue40_backlog_event"),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
