"""A run's status move writes its row with one plain UPDATE (chatapp/row_update.py): the stored row
is the one ``save(update_fields=...)`` stores, a long text goes to a blob the same way."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chatapp.models import Conversation, Run
from chatapp.row_update import update_columns

pytestmark = pytest.mark.django_db
NAMES = ["status", "final_text", "lease_owner", "lease_expires_at", "deliveries", "finished_at", "error"]


def _pair(owner) -> tuple[Run, Run]:
    # Two conversations: each may have one active run.
    runs = []
    for _ in range(2):
        convo = Conversation.objects.create(owner=owner)
        runs.append(
            Run.objects.create(conversation=convo, provider_name="demo", model="m", status="succeeded")
        )
    return runs[0], runs[1]


def _stored(run: Run) -> tuple:
    columns = ", ".join(connection.ops.quote_name(Run._meta.get_field(n).column) for n in NAMES)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM chatapp_run WHERE id = %s", [run.pk])  # noqa: S608
        return cursor.fetchone()


def test_the_row_written_is_the_one_save_writes(cast):
    ours, django = _pair(cast["alice"])
    now = timezone.now()
    for run in (ours, django):
        run.status, run.final_text, run.error = "running", "答案 " * 5000, 'it\'s "quoted"\x01'
        run.lease_owner, run.lease_expires_at = "host:1:abc", now + timedelta(seconds=120)
        run.deliveries, run.finished_at = 3, None
    with CaptureQueriesContext(connection) as queries:
        update_columns(ours, NAMES)
    django.save(update_fields=NAMES)
    assert len([q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]) == 1
    assert _stored(ours) == _stored(django)
    ours.refresh_from_db()
    assert ours.final_text == "答案 " * 5000 and ours.status == "running" and ours.deliveries == 3
    assert ours.lease_expires_at == now + timedelta(seconds=120)


def test_only_the_named_columns_are_written(cast):
    run, _ = _pair(cast["alice"])
    run.status, run.model = "running", "not-written"
    update_columns(run, ["status"])
    run.refresh_from_db()
    assert (run.status, run.model) == ("running", "m")


def test_a_missing_row_or_an_unknown_name_is_an_error(cast):
    run, _ = _pair(cast["alice"])
    Run.objects.filter(pk=run.pk).delete()
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        update_columns(run, ["status"])
    with pytest.raises(FieldDoesNotExist):
        update_columns(run, ["no_such_column"])
