"""``worker.upsert``: one statement inserts a round or tool-call row or updates it, and says which."""

from __future__ import annotations

import pytest

from chatapp.models import ToolCall
from chatapp.worker.upsert import upsert
from tests.worker.scenario import new_run

pytestmark = pytest.mark.django_db


def test_the_first_write_inserts_and_the_next_updates_the_same_row(cast):
    run = new_run(cast["alice"], "files")
    keys = {"run_id": run.pk, "round_index": 0, "index": 1}
    first = {"call_id": "c1", "name": "read_file", "status": "proposed", "definition": {"name": "read_file"}}
    pk, inserted = upsert(ToolCall, keys, first)
    assert inserted
    created = ToolCall.objects.get(pk=pk)
    assert (created.status, created.definition, created.attempts) == ("proposed", {"name": "read_file"}, 0)

    pk_again, inserted = upsert(ToolCall, keys, {"call_id": "c1", "name": "read_file", "status": "running"})
    assert (pk_again, inserted) == (pk, False)
    row = ToolCall.objects.get(pk=pk)
    assert row.status == "running"
    # Fields the update does not name keep their values; the creation time stays, the update's moves.
    assert row.definition == {"name": "read_file"}
    assert row.created_at == created.created_at and row.updated_at > created.updated_at
    assert ToolCall.objects.filter(run=run).count() == 1


def test_another_position_is_another_row(cast):
    run = new_run(cast["alice"], "files")
    a, inserted_a = upsert(ToolCall, {"run_id": run.pk, "round_index": 0, "index": 0}, {"name": "a"})
    b, inserted_b = upsert(ToolCall, {"run_id": run.pk, "round_index": 0, "index": 1}, {"name": "b"})
    assert inserted_a and inserted_b and a != b
