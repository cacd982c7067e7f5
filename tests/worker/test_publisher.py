"""A run's stored frames reach its conversation's group as the page reads them; a failed publish
loses nothing and raises nothing (the frame is in the event log)."""

from __future__ import annotations

import asyncio
import json
import logging

from channels.layers import InMemoryChannelLayer

from chatapp.worker.publisher import LiveFrame, RunPublisher
from tests.worker.stand_ins import listen, received


async def test_frames_reach_the_group_in_order_as_envelopes():
    layer = InMemoryChannelLayer()
    channel = await listen(layer, "conversation.7")
    publisher = RunPublisher(3, "conversation.7", asyncio.Semaphore(1), layer)
    await publisher.publish(5, "run_finished", {"text": "hi"})
    await publisher.publish_stored([{"run": 3, "seq": 6, "type": "status", "data": {"status": "succeeded"}}])
    assert await received(layer, channel, 2) == [
        {"run": 3, "seq": 5, "type": "run_finished", "data": {"text": "hi"}},
        {"run": 3, "seq": 6, "type": "status", "data": {"status": "succeeded"}},
    ]


async def test_a_layer_that_fails_is_logged_and_the_run_goes_on(caplog):
    class Down(InMemoryChannelLayer):
        async def group_send(self, group, message):
            raise ConnectionError("redis is away")

    publisher = RunPublisher(3, "conversation.7", asyncio.Semaphore(1), Down())
    with caplog.at_level(logging.WARNING, logger="chatapp.worker.publisher"):
        await publisher.publish(5, "run_finished", {"text": "hi"})
    assert "publishing a frame failed" in caplog.text


def test_an_oversized_frame_is_bounded_before_it_is_sent(settings):
    settings.FRAME_MAX_BYTES = 16 * 1024
    message = LiveFrame(1, 2, "tool_call", {"name": "f", "result": "r" * 100_000}, "g").message()
    assert len(message["text"].encode()) <= 16 * 1024
    assert json.loads(message["text"])["data"]["name"] == "f"
