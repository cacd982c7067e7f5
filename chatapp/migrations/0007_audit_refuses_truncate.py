"""PostgreSQL: the append-only audit table also refuses TRUNCATE (issue 16 item 5).

A session may opt in with ``SET clearloop.audit_truncate = 'allow'`` (the test suite does, to flush
its database between tests); doing so takes the same access as dropping the trigger, so it adds no
way around it for an attacker, while a stray ``TRUNCATE`` by an operator or a compromised app role
that does not know the setting is refused.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION chatapp_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' AND current_setting('clearloop.audit_truncate', true) = 'allow' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'chatapp_auditevent is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql
"""
TRIGGER = """
CREATE TRIGGER chatapp_auditevent_no_truncate
    BEFORE TRUNCATE ON chatapp_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION chatapp_auditevent_append_only()
"""
DROP = "DROP TRIGGER IF EXISTS chatapp_auditevent_no_truncate ON chatapp_auditevent"


def _on_postgres(*statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("chatapp", "0006_secrets_at_rest")]

    operations = [migrations.RunPython(_on_postgres(FUNCTION, DROP, TRIGGER), _on_postgres(DROP))]
