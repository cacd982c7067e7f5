"""L4 (issue 16): the read-only SQL tool's role cannot take the lock that serialises the audit chain."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from agent.tools import ensure_demo_database
from chatapp.audit import record, verify_chain

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's locks")
def test_the_sql_reader_role_cannot_stall_audited_writes():
    cfg = connection.settings_dict
    admin = psycopg.conninfo.make_conninfo(
        host=cfg["HOST"] or "127.0.0.1",
        port=cfg["PORT"] or 5432,
        user=cfg["USER"] or "postgres",
        dbname=cfg["NAME"],
    )
    reader = ensure_demo_database(admin)
    with psycopg.connect(reader) as conn:  # the role the model's SQL runs as
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("LOCK TABLE public.chatapp_auditevent IN SHARE ROW EXCLUSIVE MODE")
        conn.rollback()
        # Nor append or take the lock through the chain's append (migration 0031): it runs with the
        # caller's privileges, and the lock inside needs write privileges on the table.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "SELECT * FROM public.chatapp_audit_append('{}', '{}', '{}', '{}', '{}', '{}', '{}')"
            )
        conn.rollback()
        # What it could do before: take the advisory key the chain used. The chain no longer uses one,
        # so an append goes through while the reader holds it.
        conn.execute("SELECT pg_advisory_lock(2360381289)")
        record("export", actor="otto", payload={"n": 1})
        conn.execute("SELECT pg_advisory_unlock(2360381289)")
    assert verify_chain().ok
