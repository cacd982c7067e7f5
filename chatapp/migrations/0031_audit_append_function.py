"""PostgreSQL: the audit chain's append in one statement (chatapp/audit/log.py, docs/audit.md).

The chain's lock (a table lock, held until the appending transaction ends) was taken by one round
trip, the hashes computed in Python, the rows inserted by a second round trip and the transaction
committed by a third: under load every appender in every process queued on that lock while its
holder waited for its own process's interpreter between those steps (sampled at 20 concurrent sends:
about one backend waiting on it at any moment, docs/performance.md, session 28). This function takes
the lock, reads the chain's head, stamps, numbers, hashes and inserts the rows in one call; the
caller only commits after it.

The hash is the documented one (``chatapp/audit/chain.py``): sha256 of the row's canonical JSON. The
caller passes, per row, that JSON cut where the values known only under the lock go (``created_at``,
``prev_hash``, ``seq``); keys sort as actor, created_at, kind, payload, prev_hash, run_id, seq, so the
three cuts are fixed. ``created_at`` is the database's clock under the lock, so it never runs
backwards along ``seq``; it is written as Python's ``isoformat(timespec="microseconds")`` in UTC.

SECURITY INVOKER (the default): it runs with its caller's privileges, and the table lock inside needs
write privileges on the table, so a role that could not append before (the read-only SQL tool's) cannot
append or take the chain's lock through it either. EXECUTE is left to PUBLIC (PostgreSQL's default): a
deployment whose app role is not the role that migrates needs no grant beyond the table's. The
function keeps the migrating session's search_path (``SET search_path FROM CURRENT``), so the table it
locks and appends to is the app's whatever the caller's search_path names.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION chatapp_audit_append(
    heads text[], bodies text[], tails text[], kinds text[], actors text[], run_ids bigint[], payloads jsonb[]
) RETURNS TABLE (r_seq bigint, r_id bigint, r_created_at timestamptz, r_prev_hash text, r_hash text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    last_seq bigint;
    last_hash text;
    i integer;
BEGIN
    LOCK TABLE chatapp_auditevent IN SHARE ROW EXCLUSIVE MODE;
    SELECT a.seq, a.hash INTO last_seq, last_hash FROM chatapp_auditevent a ORDER BY a.seq DESC LIMIT 1;
    IF NOT FOUND THEN
        last_seq := 0;
        last_hash := repeat('0', 64);
    END IF;
    FOR i IN 1 .. coalesce(array_length(heads, 1), 0) LOOP
        r_seq := last_seq + 1;
        r_created_at := date_trunc('microseconds', clock_timestamp());
        r_prev_hash := last_hash;
        r_hash := encode(sha256(convert_to(
            heads[i] || to_char(r_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+00:00'
            || bodies[i] || r_prev_hash || tails[i] || r_seq::text || '}',
            'UTF8')), 'hex');
        INSERT INTO chatapp_auditevent (seq, kind, actor, run_id, payload, created_at, prev_hash, hash)
        VALUES (r_seq, kinds[i], actors[i], run_ids[i], payloads[i], r_created_at, r_prev_hash, r_hash)
        RETURNING chatapp_auditevent.id INTO r_id;
        last_seq := r_seq;
        last_hash := r_hash;
        RETURN NEXT;
    END LOOP;
END;
$$
"""
DROP = (
    "DROP FUNCTION IF EXISTS chatapp_audit_append(text[], text[], text[], text[], text[], bigint[], jsonb[])"
)


def _on_postgres(*statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("chatapp", "0030_conversation_draft")]

    operations = [migrations.RunPython(_on_postgres(FUNCTION), _on_postgres(DROP))]
