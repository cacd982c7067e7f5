"""A socket's replay goes out before the live frames that arrive while it is read.

Seen in CI (tests/durable/test_reconnect.py): a client resumed, the socket read the stored frames,
and meanwhile the run's end was published and forwarded at once, ahead of the frame stored just
before it; a client that resumes from the highest number it holds then skipped that frame for good.
Here a live frame is published while the replay is being read (the read waits until the bus has
handed it to the socket), and the client must get the replay, its end marker, then the live frame.
The same held for a frame published between the socket's connect and the client's resume request
(CI, session 19): it went out at once, ahead of the replay."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings

from chatapp import consumers, event_log, frames
from chatapp.routing import websocket_urlpatterns
from chatapp.worker.fanout import publish_many
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db(transaction=True)


async def test_frames_published_during_the_replay_follow_it(cast, monkeypatch):
    if settings.EMBEDDED_REDIS:
        pytest.skip("needs REDIS_URL (make test sets it)")
    run = await sync_to_async(make_run)(cast["alice"], status="running")
    stored = await sync_to_async(event_log.stored_frames)(run.conversation_id, {}, run.pk, 100)
    last = stored[-1]["seq"]
    live = {"run": run.pk, "seq": last + 1, "type": "status", "data": {"status": "succeeded"}}
    layer, group = get_channel_layer(), frames.group(run.conversation_id)
    forwarded = asyncio.Event()
    forward = consumers.ConversationConsumer._forward

    async def noting_forward(self, text):
        forwarded.set()
        await forward(self, text)

    async def slow_read(self, positions, since_run):
        read = sync_to_async(event_log.stored_frames)
        frames_read = await read(self.conversation_id, positions, since_run, consumers.REPLAY_LIMIT)
        await publish_many(layer, [(group, {"type": "run.frame", "text": json.dumps(live)})])
        await asyncio.wait_for(forwarded.wait(), 5)  # the live frame reached the socket mid-replay
        return frames_read

    monkeypatch.setattr(consumers.ConversationConsumer, "_forward", noting_forward)
    monkeypatch.setattr(consumers.ConversationConsumer, "_stored_frames", slow_read)
    communicator = _socket(run, cast["alice"])
    assert (await communicator.connect())[0]
    await _assert_replay_then_live(communicator, run, stored, live)


async def _assert_replay_then_live(communicator, run, stored, live) -> None:
    """Resume from nothing: the stored frames, the replay's end marker, then the live frame."""
    await communicator.send_to(text_data=json.dumps({"resume": {str(run.pk): 0}, "since_run": run.pk}))
    got = [json.loads(await communicator.receive_from(timeout=5)) for _ in range(len(stored) + 2)]
    assert [f.get("seq") for f in got[: len(stored)]] == [f["seq"] for f in stored]
    assert got[len(stored)]["type"] == frames.Kind.REPLAY_DONE
    assert got[-1] == live
    await communicator.disconnect()


def _socket(run, user) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{run.conversation_id}/"
    )
    communicator.scope["user"] = user
    return communicator


def _noting_forward(monkeypatch) -> asyncio.Event:
    """Set once the bus has handed a live frame to a socket."""
    forwarded = asyncio.Event()
    forward = consumers.ConversationConsumer._forward

    async def noting_forward(self, text):
        await forward(self, text)
        forwarded.set()

    monkeypatch.setattr(consumers.ConversationConsumer, "_forward", noting_forward)
    return forwarded


async def _live_after_connect(cast, monkeypatch, wait: float):
    """A run's stored frames, a socket connected to it (holding live frames for ``wait`` seconds of
    the client's silence), and its next frame published to that socket before the client speaks."""
    if settings.EMBEDDED_REDIS:
        pytest.skip("needs REDIS_URL (make test sets it)")
    monkeypatch.setattr(consumers, "FIRST_MESSAGE_WAIT", wait)
    run = await sync_to_async(make_run)(cast["alice"], status="running")
    stored = await sync_to_async(event_log.stored_frames)(run.conversation_id, {}, run.pk, 100)
    live = {"run": run.pk, "seq": stored[-1]["seq"] + 1, "type": "status", "data": {"status": "succeeded"}}
    forwarded = _noting_forward(monkeypatch)
    communicator = _socket(run, cast["alice"])
    assert (await communicator.connect())[0]
    group = frames.group(run.conversation_id)
    await publish_many(get_channel_layer(), [(group, {"type": "run.frame", "text": json.dumps(live)})])
    await asyncio.wait_for(forwarded.wait(), 5)
    return run, stored, live, communicator


async def test_a_frame_published_before_the_resume_request_follows_the_replay(cast, monkeypatch):
    run, stored, live, communicator = await _live_after_connect(cast, monkeypatch, 30.0)
    await _assert_replay_then_live(communicator, run, stored, live)


async def test_a_client_that_asks_for_no_replay_gets_the_held_frames_at_once(cast, monkeypatch):
    run, _, live, communicator = await _live_after_connect(cast, monkeypatch, 30.0)
    assert await communicator.receive_nothing(timeout=0.2)  # held for the client's first message
    await communicator.send_to(text_data=json.dumps({"hello": "no resume"}))
    assert json.loads(await communicator.receive_from(timeout=5)) == live
    await communicator.disconnect()


async def test_a_client_that_says_nothing_gets_the_live_frames_after_the_wait(cast, monkeypatch):
    run, _, live, communicator = await _live_after_connect(cast, monkeypatch, 0.3)
    assert json.loads(await communicator.receive_from(timeout=5)) == live
    await communicator.disconnect()
