"""The REST API's SSE stream and the OpenAI-compatible stream (``services/run_events.follow``) are
woken by the conversation's frame bus, the channel the worker publishes every live frame to (one
``PUBLISH`` per frame, no channel-layer group: ``worker/fanout.py``). The reader's poll is set to
30 s here, so only a wake-up can deliver an event within the test's 5 s."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from chatapp import event_log, frame_bus, frames
from chatapp.models import RunEvent
from chatapp.services import run_events
from chatapp.worker.fanout import publish_many
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _slow_poll(monkeypatch):
    if settings.EMBEDDED_REDIS:
        pytest.skip("needs REDIS_URL (make test sets it)")
    monkeypatch.setattr(run_events, "POLL_SECONDS", 30.0)


async def _next_event(stream) -> run_events.StoredEvent:
    async with asyncio.timeout(5):
        while True:
            item = await anext(stream)
            if isinstance(item, run_events.StoredEvent):
                return item


async def _last_seq(run_id: int) -> int:
    seqs = RunEvent.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True)
    return await seqs.afirst() or 0


async def _joined() -> None:
    """The reader listens on the bus (it subscribes before its first read)."""
    async with asyncio.timeout(5):
        while not any(sub.listeners for sub in frame_bus.bus()._subscriptions.values()):
            await asyncio.sleep(0.01)


async def _store(run_id: int, seq: int) -> None:
    await sync_to_async(event_log.insert_rows)(
        [(run_id, seq, "delta", {"text": f"t{seq}"})], durable=False, using="default"
    )


async def test_a_published_frame_wakes_the_reader_through_the_bus(cast):
    run = await sync_to_async(make_run)(cast["alice"], status="running")
    layer = get_channel_layer()
    assert frame_bus.supports(layer)
    last = await _last_seq(run.pk)
    stream = run_events.follow(run.pk, run.conversation_id, after=last)
    first = asyncio.ensure_future(_next_event(stream))
    await _joined()
    await _store(run.pk, last + 1)
    await publish_many(layer, [(frames.group(run.conversation_id), {"type": "run.frame", "text": "{}"})])
    event = await first
    assert (event.seq, event.data) == (last + 1, {"text": f"t{last + 1}"})
    await stream.aclose()
    assert not any(sub.listeners for sub in frame_bus.bus()._subscriptions.values())  # left the bus


async def test_a_broken_subscription_makes_the_reader_read_at_once_then_poll(cast):
    run = await sync_to_async(make_run)(cast["alice"], status="running")
    last = await _last_seq(run.pk)
    stream = run_events.follow(run.pk, run.conversation_id, after=last)
    first = asyncio.ensure_future(_next_event(stream))
    await _joined()
    await _store(run.pk, last + 1)
    # Frames published while a subscription was broken are gone: the reader must look at the log.
    for subscription in list(frame_bus.bus()._subscriptions.values()):
        subscription._lose("test")
    event = await first
    assert event.seq == last + 1
    await stream.aclose()
