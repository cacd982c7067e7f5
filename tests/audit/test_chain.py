"""The hash chain: appends link up, and verification names the first broken link."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from chatapp.audit import GENESIS, canonical_json, record, row_hash, verify_chain
from chatapp.audit.chain import document, sha256_hex
from chatapp.models import AuditEvent
from tests.audit.conftest import on_postgres

pytestmark = pytest.mark.django_db


def _append(n: int) -> list[AuditEvent]:
    return [record("export", actor="otto", payload={"n": i, "text": "héllo ✓"}) for i in range(n)]


def _raw_sql(sql: str, params: list) -> None:
    """Change the table behind the application's back, as a superuser would (trigger off on PostgreSQL)."""
    with connection.cursor() as cursor:
        if on_postgres():
            cursor.execute("ALTER TABLE chatapp_auditevent DISABLE TRIGGER chatapp_auditevent_append_only")
        cursor.execute(sql, params)
        if on_postgres():
            cursor.execute("ALTER TABLE chatapp_auditevent ENABLE TRIGGER chatapp_auditevent_append_only")


def test_appends_link_each_row_to_the_one_before():
    rows = _append(4)
    assert [r.seq for r in rows] == [1, 2, 3, 4]
    assert rows[0].prev_hash == GENESIS
    for before, after in zip(rows, rows[1:], strict=False):
        assert after.prev_hash == before.hash
    result = verify_chain()
    assert result.ok and result.count == 4 and result.head_hash == rows[-1].hash


def test_the_hash_is_sha256_of_the_documented_canonical_json():
    row = record("run_created", run_id=7, actor="alice", payload={"b": 1, "a": "ü"})
    row.refresh_from_db()
    text = canonical_json(
        document(
            seq=row.seq,
            kind="run_created",
            actor="alice",
            run_id=7,
            payload={"a": "ü", "b": 1},
            created_at=row.created_at,
            prev_hash=GENESIS,
        )
    )
    assert text.startswith('{"actor":"alice","created_at":"') and '"a":"ü"' in text and " " not in text
    assert row.hash == sha256_hex(text) == row_hash(row)


def test_awkward_json_values_survive_the_round_trip():
    record("export", payload={"big": 1e20, "tiny": 1e-7, "nul": "a\x00b", "nan": float("nan"), "t": (1, 2)})
    assert verify_chain().ok


def test_an_empty_chain_verifies(capsys):
    call_command("verify_audit")
    assert capsys.readouterr().out.splitlines()[0] == "OK: 0 events"


def test_the_command_says_ok_with_the_count_and_prints_the_head(capsys):
    rows = _append(3)
    call_command("verify_audit")
    out = capsys.readouterr().out.splitlines()
    assert out == ["OK: 3 events", f"head: 3:{rows[-1].hash}"]


def test_an_edited_payload_is_named_by_its_seq():
    _append(5)
    _raw_sql("UPDATE chatapp_auditevent SET payload = %s WHERE seq = 3", ['{"n": 99}'])
    result = verify_chain()
    assert not result.ok
    assert (result.broken.seq, result.broken.problem) == (3, "hash_mismatch")
    assert result.count == 2
    with pytest.raises(CommandError, match=r"BROKEN at seq 3: payload edited \(hash mismatch\)") as info:
        call_command("verify_audit")
    assert info.value.returncode == 1


def test_a_rewritten_row_with_a_fresh_hash_breaks_the_next_link():
    _append(4)
    forged = AuditEvent.objects.get(seq=2)
    forged.actor = "mallory"
    new_hash = row_hash(forged)
    _raw_sql("UPDATE chatapp_auditevent SET actor = 'mallory', hash = %s WHERE seq = 2", [new_hash])
    result = verify_chain()
    assert (result.broken.seq, result.broken.problem) == (3, "prev_hash_mismatch")
    assert "prev_hash mismatch" in result.broken.detail


def test_a_deleted_row_is_a_gap_named_by_the_missing_seq():
    _append(5)
    _raw_sql("DELETE FROM chatapp_auditevent WHERE seq = 4", [])
    result = verify_chain()
    assert (result.broken.seq, result.broken.problem) == (4, "gap")
    assert "missing seq (gap)" in result.broken.detail
    with pytest.raises(CommandError, match="BROKEN at seq 4: missing seq"):
        call_command("verify_audit")


def test_a_deleted_first_row_is_a_gap_at_seq_1():
    _append(2)
    _raw_sql("DELETE FROM chatapp_auditevent WHERE seq = 1", [])
    assert verify_chain().broken.seq == 1


def test_an_anchor_catches_rows_removed_from_the_end(capsys):
    rows = _append(3)
    anchor = f"3:{rows[-1].hash}"
    call_command("verify_audit", anchor=anchor)
    assert capsys.readouterr().out.startswith("OK: 3 events")
    _raw_sql("DELETE FROM chatapp_auditevent WHERE seq = 3", [])
    assert verify_chain().ok  # a removed tail is invisible to the chain alone ...
    with pytest.raises(CommandError, match="BROKEN at seq 3: anchored seq 3 is missing"):
        call_command("verify_audit", anchor=anchor)  # ... but not to an anchor kept elsewhere


def test_a_bad_anchor_argument_is_refused_with_the_expected_form():
    with pytest.raises(CommandError, match="SEQ:HASH"):
        call_command("verify_audit", anchor="3:nothex")


def test_record_inside_a_rolled_back_transaction_leaves_no_row():
    from django.db import transaction

    _append(1)
    with pytest.raises(RuntimeError), transaction.atomic():
        record("export", payload={})
        raise RuntimeError("the caller's change failed")
    assert AuditEvent.objects.count() == 1
    assert record("export", payload={}).seq == 2


@pytest.mark.parametrize(
    "actor, kind, run_id, payload",
    [
        (
            "alice",
            "run_created",
            7,
            {"b": 1, "a": "ü", "nested": {"z": [1, 2.5, None, True], "y": '"quoted" \\ back'}},
        ),
        ("system", "export", None, {}),
        ("王小明", "approval", 2**40, {"text": "line\nbreak\ttab \u2028 😀", "k": [{"b": 1, "a": 2}]}),
    ],
)
def test_the_cuts_the_database_fills_in_give_the_documented_canonical_json(actor, kind, run_id, payload):
    """PostgreSQL appends in one call that fills in created_at, prev_hash and seq under the chain's lock
    (migration 0031): the three cuts around them must give exactly canonical_json(document(...))."""
    from datetime import UTC, datetime

    from chatapp.audit.chain import iso
    from chatapp.audit.log import _Entry, canonical_cuts

    head, body, tail = canonical_cuts(_Entry(kind, actor, run_id, payload))
    stamp = datetime(2026, 12, 7, 23, 59, 1, 42, tzinfo=UTC)
    prev = "ab" * 32
    expected = canonical_json(
        document(
            seq=123, kind=kind, actor=actor, run_id=run_id, payload=payload, created_at=stamp, prev_hash=prev
        )
    )
    assert head + iso(stamp) + body + prev + tail + "123" + "}" == expected


def test_rows_appended_together_are_stamped_in_their_order_and_verify():
    from chatapp.audit.log import appended_together

    with transaction.atomic(), appended_together():
        for i in range(5):
            record("export", actor="otto", payload={"n": i, "s": "ü\n😀"})
    rows = list(AuditEvent.objects.order_by("seq"))
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    assert all(a.created_at <= b.created_at for a, b in zip(rows, rows[1:], strict=False))
    assert all(r.hash == row_hash(r) for r in rows)
    assert verify_chain().ok


def test_a_chain_written_by_the_python_append_goes_on_with_the_one_call_append():
    """An existing deployment's chain (rows hashed in Python, as before migration 0031 and on SQLite
    now) continues unbroken when the database's one-call append takes over."""
    from django.utils import timezone

    fields = []
    prev = GENESIS
    for seq in (1, 2):
        doc = {"seq": seq, "kind": "export", "actor": "otto", "run_id": None, "payload": {"n": seq, "s": "ü"}}
        row = AuditEvent(**doc, created_at=timezone.now(), prev_hash=prev)
        row.hash = prev = row_hash(row)
        fields.append(row)
    AuditEvent.objects.bulk_create(fields)
    appended = record("export", actor="otto", payload={"n": 3})
    assert appended.seq == 3 and appended.prev_hash == prev
    assert appended.hash == row_hash(AuditEvent.objects.get(seq=3))
    result = verify_chain()
    assert result.ok and result.count == 3
