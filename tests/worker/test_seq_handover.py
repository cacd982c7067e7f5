"""The duplicate ``seq`` the chaos test found (docs/security.md): an approval that lands the moment a
segment pauses numbers its frames after the stored ones, while the pausing segment still holds the
lease and its own numbers in memory. Reproduced here in process, deterministically, with the real
recorder, the store and the approvals service; fixed at the one allocator (``event_log.Sequence``):
the move that hands the run over closes the segment's numbering, and a pause checks the lease."""

from __future__ import annotations

import asyncio

import pytest

from agent import events as ev
from chatapp.models import Run, RunEvent, ToolCall
from chatapp.services.approvals import decide
from chatapp.worker import store
from chatapp.worker.store import LeaseLost
from tests.worker.scenario import InlineRuntime, new_run, recorder_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _one_connection(settings):
    settings.DELTA_DB = "default"


def awaiting(call_id: str = "c1") -> ev.ToolCallChanged:
    return ev.ToolCallChanged(0, 0, call_id, "send_message", '{"to": "x"}', "awaiting_approval", risk="high")


def numbers(run: Run) -> list[int]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))


def test_an_approval_landing_as_the_segment_pauses_never_shares_a_number_with_it(cast):
    run = new_run(cast["alice"])
    runtime = InlineRuntime()
    recorder = recorder_for(run, runtime)

    async def segment() -> None:
        async with recorder:
            await recorder.emit(awaiting())
            await recorder.emit(ev.ApprovalRequested(round_index=0, call_ids=("c1",)))  # paused: committed
            # The approver is instant: it decides while this segment is still ending (it holds the lease).
            call = await runtime.db(lambda: ToolCall.objects.get(run=run))
            await runtime.db(lambda: decide(call.pk, cast["ada"], approve=True, reason="at once"))
            # Whatever the ending segment writes now (here the failure the driver stores when anything in
            # its epilogue raises) took the number the approval's frame had taken: IntegrityError on
            # runevent_unique_seq, and the run failed. Now the segment is told the run is not its own.
            with pytest.raises(LeaseLost, match="handed its run over"):
                await recorder.emit(
                    ev.RunFailed("InternalError", "late write of the ending segment", "internal")
                )

    try:
        asyncio.run(segment())
    finally:
        runtime.close()
    run.refresh_from_db()
    stored = numbers(run)
    assert stored == list(range(1, len(stored) + 1)), stored  # each number once, none skipped
    kinds = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", "payload__status"))
    assert kinds[-3:] == [("status", "awaiting_approval"), ("approval_decided", None), ("status", "queued")]
    assert run.status == "queued" and run.last_seq == stored[-1]


def test_a_segment_whose_lease_lapsed_cannot_pause_its_successors_run(cast):
    run = new_run(cast["alice"])
    runtime = InlineRuntime()
    first = recorder_for(run, runtime)

    async def stores_a_waiting_call() -> None:
        async with first:
            await first.emit(awaiting())

    try:
        asyncio.run(stores_a_waiting_call())
    finally:
        runtime.close()
    # The first segment starved past its lease; another delivery takes the run (its "running" frame
    # takes the number after the stored ones, the one the first segment would use next).
    Run.objects.filter(pk=run.pk).update(lease_expires_at="2000-01-01T00:00:00Z")
    second = recorder_for(run, InlineRuntime())
    # The first segment's loop ends with the call still waiting and pauses the run with its numbers.
    with pytest.raises(LeaseLost, match="no longer held"):
        store.pause_for_approval(run.pk, first.seqs)
    run.refresh_from_db()
    assert (run.status, run.lease_owner) == ("running", second.seqs.lease)
    stored = numbers(run)
    assert stored == list(range(1, len(stored) + 1)), stored
