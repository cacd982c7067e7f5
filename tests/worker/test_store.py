"""The worker's writes, in process: durable events stored and read back into the same RunState, the
lease, and the moves they make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.messages import Message as AgentMessage
from agent.state import RunState
from chatapp.event_codec import event_payload, event_type
from chatapp.event_log import Sequence
from chatapp.models import Conversation, Message, Round, Run, RunEvent
from chatapp.worker.context import load_run_context
from chatapp.worker.lease import LeaseHeld, LeaseRefused, acquire_lease, release_lease
from chatapp.worker.store import pause_for_approval, persist_durable

pytestmark = pytest.mark.django_db
FROZEN = json.loads((Path(__file__).parent / "rows_2026_12_01.json").read_text(encoding="utf-8"))


@pytest.fixture
def run(cast, django_capture_on_commit_callbacks, settings):
    from chatapp.models import ProviderConfig

    ProviderConfig.objects.create(
        name="demo", kind="openai_chat", base_url="http://127.0.0.1:9/v1", model="m"
    )
    convo = Conversation.objects.create(owner=cast["alice"])
    message = Message.objects.create(
        conversation=convo, role="user", content="hi", payload={"role": "user", "content": "hi"}
    )
    created = Run.objects.create(conversation=convo, provider_name="demo", model="m", user_message=message)
    with django_capture_on_commit_callbacks(execute=False):
        acquire_lease(created.pk)
    return created


def _events():
    from chatapp.event_codec import event_from_row

    return [event_from_row(row["type"], row["payload"]) for row in FROZEN]


def test_stored_events_rebuild_the_state_the_loop_had(run):
    live = RunState.start(str(run.pk), [AgentMessage.user("hi")])
    seqs = Sequence.after_stored(run.pk)
    for event in _events():
        persist_durable(run.pk, seqs.next(), event_type(event), event_payload(event), event, {}, seqs=seqs)
        live.apply(event)
    ctx = load_run_context(run.pk)
    assert ctx.state.rounds == live.rounds and ctx.state.calls == live.calls
    assert ctx.state.outcome == live.outcome
    assert ctx.last_seq == seqs.closed_at  # the finish was its last number: it closed the sequence


def test_a_round_keeps_the_compressions_that_shrank_its_request(run):
    seqs = Sequence.after_stored(run.pk)
    compressed, finished_round = _events()[:2]
    for event in (compressed, finished_round):
        persist_durable(run.pk, seqs.next(), event_type(event), event_payload(event), event, {}, seqs=seqs)
    stored = Round.objects.get(run=run, index=0)
    assert stored.compressions == [
        {
            "round_index": 0,
            "step": "drop_reasoning",
            "detail": {"dropped": 2},
            "tokens_before": 9000,
            "tokens_after": 7000,
        }
    ]


def test_finishing_returns_the_status_frame_after_the_event(run):
    seqs = Sequence.after_stored(run.pk)
    finished = _events()[-1]
    seq = seqs.next()
    moved = persist_durable(run.pk, seq, "run_finished", event_payload(finished), finished, {}, seqs=seqs)
    assert [(f["seq"], f["type"], f["data"]) for f in moved] == [(seq + 1, "status", {"status": "succeeded"})]
    assert Run.objects.get(pk=run.pk).status == "succeeded"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (None, "succeeded"),
        ({"status": "denied", "error_code": "denied"}, "denied"),  # an approver, the user or a policy said no
        ({"status": "denied", "error_code": "run_ended"}, "succeeded"),  # closed undecided: no one said no
        ({"status": "failed", "error_code": "tool_error"}, "succeeded"),
    ],
)
def test_a_run_with_a_refused_call_finishes_denied_never_succeeded(run, call, expected):
    from chatapp.models import ToolCall

    if call:
        ToolCall.objects.create(run=run, round_index=0, index=0, call_id="c1", name="send_message", **call)
    seqs = Sequence.after_stored(run.pk)
    finished = _events()[-1]
    moved = persist_durable(
        run.pk, seqs.next(), "run_finished", event_payload(finished), finished, {}, seqs=seqs
    )
    assert [f["data"] for f in moved] == [{"status": expected}]
    assert Run.objects.get(pk=run.pk).status == expected
    assert Run.objects.get(pk=run.pk).get_status_display() == expected.capitalize()


def test_pausing_moves_a_running_run_once(run):
    seqs = Sequence.after_stored(run.pk)
    assert [f["data"]["status"] for f in pause_for_approval(run.pk, seqs)] == ["awaiting_approval"]
    assert pause_for_approval(run.pk, seqs) == []
    assert list(
        RunEvent.objects.filter(run=run, type="status").values_list("payload__status", flat=True)
    ) == [
        "running",
        "awaiting_approval",
    ]


def test_a_live_lease_is_not_taken_twice_and_a_released_one_is(run, django_capture_on_commit_callbacks):
    owner = Run.objects.get(pk=run.pk).lease_owner
    with django_capture_on_commit_callbacks(execute=False):
        with pytest.raises(LeaseHeld):
            acquire_lease(run.pk)
        release_lease(run.pk, owner)
        again = acquire_lease(run.pk)
    run.refresh_from_db()
    assert (run.lease_owner, run.deliveries, run.status) == (again, 2, "running")


def test_a_release_is_one_statement_that_clears_the_deliveries_only_of_a_paused_run(
    run, django_assert_num_queries
):
    """A paused run ended its segment cleanly (not a poison candidate); a running one keeps its count.
    One UPDATE either way (it was two, each its own commit; docs/performance.md, session 9)."""
    owner = Run.objects.get(pk=run.pk).lease_owner
    with django_assert_num_queries(1):
        release_lease(run.pk, owner)
    run.refresh_from_db()
    assert (run.lease_owner, run.lease_expires_at, run.deliveries) == ("", None, 1)
    Run.objects.filter(pk=run.pk).update(status="awaiting_approval", lease_owner="w", deliveries=2)
    with django_assert_num_queries(1):
        release_lease(run.pk, "someone else")  # not the holder: nothing changes
    run.refresh_from_db()
    assert (run.lease_owner, run.deliveries) == ("w", 2)
    release_lease(run.pk, "w")
    run.refresh_from_db()
    assert (run.lease_owner, run.lease_expires_at, run.deliveries) == ("", None, 0)


def test_a_run_that_keeps_killing_its_worker_is_failed(run, settings, django_capture_on_commit_callbacks):
    settings.RUN_MAX_DELIVERIES = 1
    release_lease(run.pk, Run.objects.get(pk=run.pk).lease_owner)
    with django_capture_on_commit_callbacks(execute=False), pytest.raises(LeaseRefused, match="poison"):
        acquire_lease(run.pk)
    run.refresh_from_db()
    assert (run.status, run.error_class) == ("failed", "PoisonRun")


def test_a_step_writes_each_call_s_row_once_and_records_every_status(run):
    """Proposed, approved and running in one step: one upsert per call with its last status, the
    definition given with the first kept, one audit record per status in order (session 15)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent import events as ev
    from chatapp.models import AuditEvent, ToolCall
    from chatapp.worker.store import DurableItem, persist_durable_batch

    def changed(index: int, status: str) -> ev.ToolCallChanged:
        return ev.ToolCallChanged(0, index, f"c{index}", "read_file", '{"path": "a"}', status, risk="read_only")

    definition = {"definition": {"name": "read_file"}, "definition_hash": "h" * 64}
    steps = [(0, "proposed", definition), (0, "approved", {}), (1, "proposed", definition), (0, "running", {})]
    seqs = Sequence.after_stored(run.pk)
    items = []
    for index, status, extra in steps:
        event = changed(index, status)
        items.append(DurableItem(seqs.next(), "tool_call", event_payload(event), event, extra))
    before = AuditEvent.objects.count()
    with CaptureQueriesContext(connection) as queries:
        persist_durable_batch(run.pk, items, run.lease_owner or "", seqs)
    upserts = [q for q in queries.captured_queries if q["sql"].startswith('INSERT INTO "chatapp_toolcall"')]
    assert len(upserts) == 2  # one per call, not one per status
    rows = {row.index: row for row in ToolCall.objects.filter(run=run)}
    assert (rows[0].status, rows[1].status) == ("running", "proposed")
    assert rows[0].definition == {"name": "read_file"} and rows[0].definition_hash == "h" * 64
    records = list(AuditEvent.objects.filter(kind="tool_call_status").order_by("seq"))[-4:]
    assert AuditEvent.objects.count() == before + 4
    assert [(r.payload["index"], r.payload["status"]) for r in records] == [(0, "proposed"), (0, "approved"), (1, "proposed"), (0, "running")]
    assert Run.objects.get(pk=run.pk).tool_calls_count == 2
