"""``audit.appended_together``: the records of one transaction are chained with one lock and one write."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from chatapp.audit import record, verify_chain
from chatapp.audit.log import appended_together
from chatapp.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)


def test_records_of_a_block_are_chained_in_order_with_one_lock_and_one_insert():
    record("before", payload={"n": 0})
    with transaction.atomic(), CaptureQueriesContext(connection) as queries, appended_together():
        for n in range(1, 5):
            assert record("step", payload={"n": n}) is None  # chained when the block ends
        assert AuditEvent.objects.count() == 1  # nothing appended yet inside the block
    sqls = [q["sql"] for q in queries.captured_queries]
    if connection.vendor == "postgresql":
        # One call takes the lock, reads the head and inserts the four rows (migration 0031); then
        # the count above.
        appends = [sql for sql in sqls if "chatapp_audit" in sql]
        assert len([sql for sql in appends if "chatapp_audit_append(" in sql]) == 1, appends
    else:
        appends = [sql for sql in sqls if "chatapp_auditevent" in sql]
        assert len([sql for sql in appends if sql.lstrip().upper().startswith("INSERT")]) == 1
        # One read of the chain's head, one INSERT, and the count above.
    assert len(appends) == (2 if connection.vendor == "postgresql" else 3), appends
    rows = list(AuditEvent.objects.order_by("seq"))
    assert [(r.seq, r.kind, r.payload.get("n")) for r in rows] == [
        (1, "before", 0),
        (2, "step", 1),
        (3, "step", 2),
        (4, "step", 3),
        (5, "step", 4),
    ]
    assert all(later.prev_hash == earlier.hash for earlier, later in zip(rows, rows[1:], strict=False))
    assert verify_chain().ok


def test_a_block_that_raises_appends_nothing_and_the_chain_goes_on():
    with pytest.raises(RuntimeError), transaction.atomic(), appended_together():
        record("lost", payload={})
        raise RuntimeError("the step failed")
    assert not AuditEvent.objects.exists()
    with transaction.atomic(), appended_together():
        with appended_together():  # nested: the outer block writes
            record("inner", payload={})
        record("outer", payload={})
        assert not AuditEvent.objects.exists()
    assert list(AuditEvent.objects.order_by("seq").values_list("kind", flat=True)) == ["inner", "outer"]
    assert verify_chain().ok
