"""Appends from many threads (each its own connection and transaction) never fork the chain."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from chatapp.audit import record, verify_chain
from chatapp.models import AuditEvent

THREADS, EACH = 8, 15


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="threads need their own connections to a server database (SQLite tests run in memory)",
)
@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_make_one_valid_chain():
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            barrier.wait()
            for i in range(EACH):
                with transaction.atomic():
                    # Some other work in the same transaction first, as the real callers do.
                    AuditEvent.objects.count()
                    record("round_stored", run_id=worker, payload={"worker": worker, "i": i})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    result = verify_chain()
    assert result.ok, result.broken
    assert result.count == THREADS * EACH
    assert list(AuditEvent.objects.values_list("seq", flat=True)) == list(range(1, THREADS * EACH + 1))
    for worker in range(THREADS):
        mine = AuditEvent.objects.filter(run_id=worker).order_by("seq")
        assert [r.payload["i"] for r in mine] == list(range(EACH))
