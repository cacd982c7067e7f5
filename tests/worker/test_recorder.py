"""The engine's sink in the worker, in process: what the loop emits is stored, then published, in
one order; the run is watched for a stop only while it is recorded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agent import events as ev
from agent.toolbox import LinkRequest
from chatapp.models import Conversation, Message, Run, RunEvent
from chatapp.worker.recorder import RunRecorder
from tests.worker.stand_ins import listen, received

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")  # live frames use "deltas"
LEASE = "worker-a:1"


@pytest.fixture
def run(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    return Run.objects.create(
        conversation=convo,
        provider_name="demo",
        model="m",
        status=Run.Status.RUNNING,
        lease_owner=LEASE,
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )


def recorder_for(run, runtime, coalesce_ms=60_000):
    return RunRecorder(runtime, run.pk, run.conversation_id, run.last_seq, coalesce_ms, LEASE)


def stored(run_id):
    rows = RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "type")
    partial = list(Message.objects.filter(run_id=run_id, partial=True).values_list("content", flat=True))
    return list(rows), partial


async def test_deltas_then_a_failure_are_stored_and_published_in_one_order(run, layer, runtime):
    channel = await listen(layer, f"conversation.{run.conversation_id}")
    async with recorder_for(run, runtime) as recorder:
        await recorder.emit(ev.TextDelta(round_index=0, text="Hello, "))  # out at once: first of a window
        await recorder.emit(ev.TextDelta(round_index=0, text="world"))  # held for the window
        await recorder.emit(ev.ToolProgress(round_index=0, index=0, call_id="c", name="t", progress=1))
        await recorder.emit(ev.RunFailed("Boom", "it broke", "internal"))
    frames = await received(layer, channel, 5)
    assert [(f["seq"], f["type"]) for f in frames] == [
        (1, "delta"),
        (2, "delta"),  # flushed before the progress frame, not after it
        (3, "tool_progress"),
        (4, "run_failed"),
        (5, "status"),
    ]
    assert [f["data"].get("text") for f in frames[:2]] == ["Hello, ", "world"]
    assert frames[4]["data"]["status"] == "failed"
    rows, partial = await runtime.db(stored, run.pk)
    assert [seq for seq, _ in rows] == [1, 2, 3, 4, 5] and partial == ["Hello, world"]


async def test_the_run_is_watched_for_a_stop_only_inside_async_with(run, runtime):
    recorder = recorder_for(run, runtime)
    assert runtime.cancels.watched == {}  # building one has no effect
    with pytest.raises(RuntimeError):
        recorder.stopped  # noqa: B018 - the property raises outside `async with`
    with pytest.raises(ZeroDivisionError):
        async with recorder:
            assert runtime.cancels.watched == {run.pk: 1}
            assert not await recorder.is_cancelled()
            runtime.cancels.cancelled.add(run.pk)
            assert await recorder.is_cancelled()
            1 / 0  # noqa: B018 - leaving by an error stops watching too
    assert runtime.cancels.watched == {}


async def test_a_link_frame_follows_the_text_before_it(run, layer, runtime):
    channel = await listen(layer, f"conversation.{run.conversation_id}")
    request = LinkRequest(server="s", message="m", url="https://a.example/x", call_id="c1", tool="t")
    async with recorder_for(run, runtime) as recorder:
        await recorder.emit(ev.TextDelta(round_index=0, text="a "))
        await recorder.emit(ev.TextDelta(round_index=0, text="b"))  # the last word, held until the link
        await recorder.publish_link(9, "pending", request)
    frames = await received(layer, channel, 3)
    assert [(f["type"], f["data"].get("text") or f["data"].get("state")) for f in frames] == [
        ("delta", "a "),
        ("delta", "b"),
        ("link", "pending"),
    ]
    assert frames[2]["data"] == {"id": 9, "state": "pending", "call_id": "c1", "tool": "t"}


def _running(index: int) -> ev.ToolCallChanged:
    return ev.ToolCallChanged(
        round_index=0, index=index, call_id=f"c{index}", name="t", arguments="{}", status="running"
    )


async def test_batches_queued_meanwhile_share_the_next_transaction_and_its_failure_reaches_all(run, runtime):
    """Statuses emitted from several tasks while a batch is stored are stored together next (session
    18); what storing them raised is raised in every task that emitted one of them."""
    import asyncio

    from chatapp.worker.store import LeaseLost

    async with recorder_for(run, runtime) as recorder:
        store, batches = recorder.writer.store, []

        async def counting(items, live=None):
            batches.append([item.seq for item in items])
            return await store(items, live)

        recorder.writer.store = counting
        # The first is stored at once, on its own; the two emitted while it is stored go together.
        await asyncio.gather(*(recorder.emit(_running(i)) for i in range(3)))
        assert batches == [[1], [2, 3]]
        await Run.objects.filter(pk=run.pk).aupdate(lease_owner="worker-b:1")  # another worker took it
        outcomes = await asyncio.gather(
            *(recorder.emit(_running(i)) for i in range(3, 6)), return_exceptions=True
        )
    assert batches == [[1], [2, 3], [4], [5, 6]]
    assert [type(outcome) for outcome in outcomes] == [LeaseLost] * 3
    assert await RunEvent.objects.filter(run_id=run.pk).acount() == 3  # the refused batches left nothing


async def test_a_batch_that_moves_the_run_is_not_stored_with_the_ones_after_it(run, runtime):
    import asyncio

    from chatapp.worker.recorder import _Batch
    from chatapp.worker.store import DurableItem

    recorder = recorder_for(run, runtime)
    stored: list[list[str]] = []

    async def fake_store(items, live=None):
        stored.append([item.kind for item in items])
        return []

    recorder.writer.store = fake_store
    loop = asyncio.get_running_loop()
    asking = DurableItem(1, "approval_requested", {}, ev.ApprovalRequested(0, ("c0",)), {})
    after = DurableItem(2, "tool_call", {}, _running(1), {})
    recorder._waiting = [
        _Batch([asking], [], loop.create_future()),
        _Batch([after], [], loop.create_future()),
    ]
    await recorder._store_batches(recorder._take_waiting())
    assert stored == [["approval_requested"]] and len(recorder._waiting) == 1
    await recorder._store_batches(recorder._take_waiting())
    assert stored == [["approval_requested"], ["tool_call"]] and not recorder._waiting
