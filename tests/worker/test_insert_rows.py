"""Frames stored as rows (``event_log.insert_rows``): live frames of many runs and a step's durable
frames in one INSERT. On PostgreSQL the rows go as four array parameters (``unnest``) instead of the
ORM's six quoted parameters per row (docs/performance.md, session 8); what is stored must be exactly
what the model field would have stored: long strings as blob references, no NUL character, the
``$``-keys of a model's output escaped, this process's clock in ``created_at``."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chatapp import event_log
from chatapp.blobs import REF_KEY
from chatapp.models import Blob, RunEvent
from tests.worker.scenario import new_run

pytestmark = pytest.mark.django_db


def test_rows_of_several_runs_are_stored_in_one_insert_as_the_model_field_stores_them(cast, settings):
    one, two = new_run(cast["alice"]), new_run(cast["alice"])
    long = "x" * (settings.LARGE_VALUE_MIN_CHARS + 10)
    rows = [
        (one.pk, 5, "delta", {"round_index": 0, "text": " w0\x00 w1"}),
        (two.pk, 7, "delta", {"round_index": 1, "text": "你好"}),
        (one.pk, 6, "tool_result", {"result": long, "posing": {REF_KEY: "0" * 64, "chars": 3}}),
    ]
    before = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        event_log.insert_rows(rows, durable=False, using="default")
    inserts = [q for q in queries.captured_queries if "INSERT INTO" in q["sql"] and "chatapp_runevent" in q["sql"]]
    assert len(inserts) == 1, [q["sql"][:80] for q in queries.captured_queries]
    stored = {(e.run_id, e.seq): e for e in RunEvent.objects.filter(run__in=[one, two])}
    assert stored[(one.pk, 5)].payload == {"round_index": 0, "text": " w0\ufffd w1"}
    assert stored[(two.pk, 7)].payload == {"round_index": 1, "text": "你好"}
    # The long string is kept once in Blob and read back whole; a model's "$blob" object stays its own.
    assert stored[(one.pk, 6)].payload == {"result": long, "posing": {REF_KEY: "0" * 64, "chars": 3}}
    with connection.cursor() as cursor:
        cursor.execute("SELECT payload FROM chatapp_runevent WHERE run_id = %s AND seq = 6", [one.pk])
        (raw,) = cursor.fetchone()
    assert Blob.objects.count() == 1 and long not in str(raw) and REF_KEY in str(raw)
    assert all(e.type in ("delta", "tool_result") and e.durable is False for e in stored.values())
    assert all(before <= e.created_at <= timezone.now() for e in stored.values())


def test_durable_rows_are_marked_durable_and_an_empty_list_writes_nothing(cast):
    run = new_run(cast["alice"])
    with CaptureQueriesContext(connection) as queries:
        event_log.insert_rows([], durable=True, using="default")
    assert queries.captured_queries == []
    event_log.append_durable(run.pk, [(3, "round_finished", {"round_index": 0}), (4, "tool_call", {"name": "n"})])
    assert list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "type", "durable")) == [
        (3, "round_finished", True),
        (4, "tool_call", True),
    ]


def test_a_duplicate_number_is_refused_as_before(cast):
    from django.db import IntegrityError, transaction

    run = new_run(cast["alice"])
    event_log.insert_rows([(run.pk, 9, "delta", {"text": "a"})], durable=False, using="default")
    with pytest.raises(IntegrityError), transaction.atomic():
        event_log.insert_rows([(run.pk, 9, "delta", {"text": "b"})], durable=False, using="default")
