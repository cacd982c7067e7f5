"""A run's values encoded once (docs/performance.md, session 15): ``json_text`` (orjson, with the
standard encoder for what orjson refuses), the text's checks that skip the walks of ``blobs.pack`` and
``without_nul``, the server-bound statements of the worker's writes (``bound_cursor``) and the
frames encoded once for every socket (``frame_limits.encoded_frame``). Each shortcut must store and
send exactly what the walk it skips would have."""

from __future__ import annotations

import json
import random

import pytest
from django.db import connection, transaction

from chatapp import blobs, event_log, json_text
from chatapp.bound_cursor import bound_cursor
from chatapp.frame_limits import bounded_frame, encoded_frame
from chatapp.models import Blob, Round, RunEvent
from chatapp.nul import encoded_without_nul, without_nul
from tests.worker.scenario import new_run

pytestmark = pytest.mark.django_db


# --- json_text ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        {"text": '你好 "quoted" \\ back\nslash\t\u2028', "n": [1, 2.5, None, True]},
        {1: "an integer key"},  # orjson refuses it: the standard encoder writes it
        {"big": 2**70},  # past 64 bits: likewise
        ("a", "tuple"),
    ],
)
def test_json_text_reads_back_as_the_standard_encoder_s_text(value):
    assert json.loads(json_text.dumps(value)) == json.loads(json.dumps(value, ensure_ascii=False))
    assert json_text.dumps_bytes(value).decode() == json_text.dumps(value)


def test_json_text_writes_nan_as_null_and_still_refuses_what_is_not_json():
    # The standard encoder wrote NaN, which neither jsonb nor JSON.parse accepts.
    assert json_text.dumps({"x": float("nan")}) == '{"x":null}'
    with pytest.raises(TypeError):
        json_text.dumps({"x": object()})


# --- the text's checks ----------------------------------------------------------------------------
def _values(limit: int) -> list[object]:
    """Values around the threshold, with the escapes that could hide a long string from a naive
    count (quotes and backslashes split its encoded form), and keys of ours."""
    rng = random.Random(15)
    quotes = ('"' * (limit // 2)) + "x" * (limit - limit // 2)  # exactly the threshold, half quotes
    out: list[object] = [
        {"short": "x" * (limit - 1)},
        {"long": "x" * limit},
        {"quoted": quotes},
        {"backslashes": "\\" * limit},
        {"mixed": '\\"' * (limit // 2)},
        {"arguments_raw": json.dumps({"k": "v" * limit}), "arguments": {"k": "v" * limit}},
        {"nested": [{"deep": {"$blob": "0" * 64, "chars": 3}}]},
        {"$esc": 1},
        {"$parsed": "arguments_raw"},
        ["x" * (limit // 3)] * 4,  # long in all, each string short
    ]
    alphabet = 'ab"\\\n你'
    for _ in range(40):
        size = rng.choice([limit - 2, limit - 1, limit, limit + 1, limit // 2])
        out.append({"k": "".join(rng.choice(alphabet) for _ in range(size)), "n": rng.random()})
    return out


def test_a_value_s_packed_text_is_the_text_of_the_packed_value(settings):
    settings.LARGE_VALUE_MIN_CHARS = 300
    for value in _values(settings.LARGE_VALUE_MIN_CHARS):
        walked = blobs.pack(value, "default")
        assert json.loads(blobs.packed_json(value, "default")) == walked, str(value)[:120]


def test_the_text_check_says_nothing_to_pack_only_when_the_walk_changes_nothing(settings):
    settings.LARGE_VALUE_MIN_CHARS = 300
    skipped = 0
    for value in _values(settings.LARGE_VALUE_MIN_CHARS):
        if blobs._nothing_to_pack(json_text.dumps(value)):
            skipped += 1
            assert blobs.pack(value, "default") == value, str(value)[:120]
    assert skipped >= 10  # the check does skip the usual value (else it would be no shortcut)


def test_nul_is_replaced_in_keys_and_values_and_a_value_without_is_not_copied():
    clean = {"a": ["b", {"c": 1}]}
    value, text = encoded_without_nul(clean)
    assert value is clean and json.loads(text) == clean
    dirty = {"k\x00ey": ["v\x00", {"x": "\x00"}]}
    value, text = encoded_without_nul(dirty)
    assert value == without_nul(dirty) == {"k\ufffdey": ["v\ufffd", {"x": "\ufffd"}]}
    assert json.loads(text) == value


# --- what is stored -------------------------------------------------------------------------------
TRICKY = {
    "text": 'a "quote", a \\ backslash, \\" both, {braces} and , commas, 你好, emoji 🧪, \u2028',
    "list": ["{", "}", '"', "\\", "NULL", "null", ""],
    "number": 1.5e-7,
    "none": None,
}


@pytest.mark.django_db(transaction=True)
def test_frames_bound_by_the_server_read_back_exactly(cast, settings):
    run = new_run(cast["alice"])
    long = "y" * settings.LARGE_VALUE_MIN_CHARS
    rows = [(run.pk, 1, "tool_call", TRICKY), (run.pk, 2, "tool_call", {"result": long, "nul": "a\x00b"})]
    event_log.insert_rows(rows, durable=True, using="default")
    stored = dict(RunEvent.objects.filter(run=run).values_list("seq", "payload"))
    assert stored[1] == TRICKY
    assert stored[2] == {"result": long, "nul": "a\ufffdb"}
    assert Blob.objects.filter(sha256=blobs.address(long)).exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="server-side binding is PostgreSQL's")
def test_the_bound_cursor_binds_on_the_server_and_the_usual_cursor_does_not():
    from django.db.backends.postgresql.base import Cursor, ServerBindingCursor

    with bound_cursor(connection) as cursor:
        assert isinstance(cursor.cursor, ServerBindingCursor)
        cursor.execute("SELECT %s::text", ["it's"])
        assert cursor.fetchone() == ("it's",)
    with connection.cursor() as cursor:  # the connection's own factory is left as it was
        assert isinstance(cursor.cursor, Cursor) and not isinstance(cursor.cursor, ServerBindingCursor)


@pytest.mark.django_db(transaction=True)
def test_a_round_s_row_stores_its_request_packed_as_before(cast, settings):
    from chatapp.worker.upsert import upsert

    run = new_run(cast["alice"])
    long = "z" * settings.LARGE_VALUE_MIN_CHARS
    request = {"messages": [{"role": "user", "content": long}], "meta": TRICKY, "posing": {"$parsed": 1}}
    with transaction.atomic():
        upsert(Round, {"run_id": run.pk, "index": 0}, {"request": request, "response": TRICKY})
    row = Round.objects.get(run=run, index=0)
    assert row.request == request and row.response == TRICKY
    with connection.cursor() as cursor:
        cursor.execute("SELECT request FROM chatapp_round WHERE id = %s", [row.pk])
        (raw,) = cursor.fetchone()
    assert long not in str(raw) and blobs.REF_KEY in str(raw)


# --- frames encoded once --------------------------------------------------------------------------
def test_a_frame_is_encoded_once_and_a_large_one_still_bounded(settings):
    frame = {"run": 1, "seq": 2, "type": "tool_call", "data": TRICKY}
    assert json.loads(encoded_frame(frame)) == frame
    settings.FRAME_MAX_BYTES = 4096
    big = {"run": 1, "seq": 3, "type": "tool_call", "data": {"result": "r" * 10_000, "name": "n"}}
    text = encoded_frame(big)
    assert len(text.encode()) <= settings.FRAME_MAX_BYTES
    assert json.loads(text) == bounded_frame(big)


# --- the audit chain's rows -----------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_rows_appended_together_are_stored_as_chained_and_verify():
    from chatapp.audit import record, verify_chain
    from chatapp.audit.log import appended_together
    from chatapp.models import AuditEvent

    first = record("export", actor="otto", payload={"n": 0})
    with transaction.atomic(), appended_together():
        for n in range(1, 4):
            record("export", actor="otto", payload={"n": n, "text": TRICKY["text"]})
    last = record("export", payload={"n": 4})
    rows = list(AuditEvent.objects.order_by("seq"))
    assert [row.payload["n"] for row in rows] == [0, 1, 2, 3, 4]
    assert [row.seq for row in rows] == list(range(rows[0].seq, rows[0].seq + 5))
    assert rows[2].payload["text"] == TRICKY["text"]
    assert first is not None and last is not None
    assert (first.pk, last.pk) == (rows[0].pk, rows[-1].pk) and last.hash == rows[-1].hash
    assert verify_chain().ok


@pytest.mark.django_db(transaction=True)
def test_a_lone_surrogate_is_stored_and_sent_as_the_replacement_character(cast):
    """A model's "\\ud800" escape decodes to a code point with no UTF-8 form: it failed the frames'
    INSERT (and with it the other runs' frames of the batch); it is stored like NUL, as U+FFFD."""
    run = new_run(cast["alice"])
    payload = {"text": "a\ud800b", "nested": ["\udfff"]}
    event_log.insert_rows([(run.pk, 5, "delta", payload)], durable=False, using="default")
    stored = RunEvent.objects.get(run=run, seq=5).payload
    # SQLite's rows (the ORM's escaped JSON) keep the code point as it came; nothing fails either way.
    assert stored == (
        {"text": "a\ufffdb", "nested": ["\ufffd"]} if connection.vendor == "postgresql" else payload
    )
    frame = {"run": run.pk, "seq": 5, "type": "delta", "data": payload}
    assert json.loads(encoded_frame(frame))["data"] == {"text": "a\ufffdb", "nested": ["\ufffd"]}
