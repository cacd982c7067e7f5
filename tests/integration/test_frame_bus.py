"""The frame bus on a real Redis: each socket gets its conversation's frames once and in order, and a
socket whose subscription broke is closed (the page then reconnects and back-fills), never left
silently without frames."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from channels_redis.core import RedisChannelLayer
from django.conf import settings

from chatapp import frame_bus
from chatapp.devstack import free_port
from chatapp.worker.fanout import publish_many


@pytest.fixture
def layer():
    if settings.EMBEDDED_REDIS:
        pytest.skip("needs REDIS_URL (make test sets it)")
    return RedisChannelLayer(hosts=[{"address": settings.REDIS_URL, "socket_timeout": None}])


class Socket:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.closed = asyncio.Event()
        self.got = asyncio.Event()

    async def receive(self, text: str) -> None:
        self.texts.append(text)
        self.got.set()

    async def close(self) -> None:
        self.closed.set()


async def wait_for_texts(socket: Socket, count: int) -> None:
    async with asyncio.timeout(5):
        while len(socket.texts) < count:
            socket.got.clear()
            await socket.got.wait()


async def test_each_socket_gets_its_conversations_frames_once_in_order(layer):
    bus = frame_bus.bus()
    a1, a2, b = Socket(), Socket(), Socket()
    await bus.join(layer, "conversation.1", 1, a1.receive, a1.close)
    await bus.join(layer, "conversation.1", 2, a2.receive, a2.close)
    await bus.join(layer, "conversation.2", 3, b.receive, b.close)
    messages = [(f"conversation.{1 + i % 2}", {"type": "run.frame", "text": f"frame {i}"}) for i in range(10)]
    await publish_many(layer, messages)
    await wait_for_texts(a1, 5)
    await wait_for_texts(a2, 5)
    await wait_for_texts(b, 5)
    assert a1.texts == a2.texts == [f"frame {i}" for i in range(0, 10, 2)]
    assert b.texts == [f"frame {i}" for i in range(1, 10, 2)]
    await bus.leave(layer, "conversation.1", 1)
    await publish_many(layer, [("conversation.1", {"type": "run.frame", "text": "after"})])
    await wait_for_texts(a2, 6)
    assert a1.texts[-1] == "frame 8" and a2.texts[-1] == "after"
    for key, group in ((2, "conversation.1"), (3, "conversation.2")):
        await bus.leave(layer, group, key)


async def test_a_broken_subscription_closes_its_sockets(layer):
    bus = frame_bus.bus()
    socket = Socket()
    await bus.join(layer, "conversation.9", 1, socket.receive, socket.close)
    subscription = bus._subscriptions[0]
    host, port = subscription._pubsub.connection._writer.get_extra_info("sockname")[:2]
    admin = aioredis.Redis.from_url(settings.REDIS_URL)
    # Redis drops the subscription's connection (as when it restarts): redis-py would reconnect
    # and re-subscribe on its own, and the frames published in between would be lost unnoticed.
    assert await admin.client_kill_filter(_type=None, addr=f"{host}:{port}") == 1
    await admin.aclose()
    async with asyncio.timeout(5):
        await socket.closed.wait()
    # A new socket gets a new subscription that works.
    again = Socket()
    await bus.join(layer, "conversation.9", 2, again.receive, again.close)
    await publish_many(layer, [("conversation.9", {"type": "run.frame", "text": "live"})])
    await wait_for_texts(again, 1)
    assert again.texts == ["live"] and socket.texts == []
    await bus.leave(layer, "conversation.9", 2)


async def test_no_redis_refuses_the_socket():
    layer = RedisChannelLayer(hosts=[{"address": f"redis://127.0.0.1:{free_port()}/0"}])
    socket = Socket()
    with pytest.raises(frame_bus.BusUnavailable):
        await frame_bus.bus().join(layer, "conversation.3", 1, socket.receive, socket.close)


async def test_many_sockets_joining_at_once_share_one_working_subscription(layer):
    bus = frame_bus.bus()
    sockets = [Socket() for _ in range(20)]
    await asyncio.gather(
        *(bus.join(layer, f"conversation.{100 + i}", i, s.receive, s.close) for i, s in enumerate(sockets))
    )
    await publish_many(layer, [(f"conversation.{100 + i}", {"type": "run.frame", "text": str(i)}) for i in range(20)])
    for i, socket in enumerate(sockets):
        await wait_for_texts(socket, 1)
        assert socket.texts == [str(i)] and not socket.closed.is_set()
    assert len(bus._subscriptions) == 1
    for i in range(20):
        await bus.leave(layer, f"conversation.{100 + i}", i)


@pytest.mark.django_db(transaction=True)
async def test_a_socket_on_the_bus_stops_getting_frames_once_its_user_may_not_see_them(cast, monkeypatch):
    # The path every browser socket takes in production (the frame bus, not the channel-layer group):
    # access is asked again while frames flow (consumers.ACCESS_RECHECK_SECONDS).
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth import get_user_model

    from chatapp import consumers, frames
    from chatapp.routing import websocket_urlpatterns
    from tests.audit.conftest import make_run

    if settings.EMBEDDED_REDIS:
        pytest.skip("needs REDIS_URL (make test sets it)")
    run = await sync_to_async(make_run)(cast["alice"], text="private")
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/conversations/{run.conversation_id}/")
    communicator.scope["user"] = cast["alice"]
    assert (await communicator.connect())[0]
    layer, group = get_channel_layer(), frames.group(run.conversation_id)
    assert frame_bus.supports(layer)
    await publish_many(layer, [(group, {"type": "run.frame", "text": '{"n": 1}'})])
    assert await communicator.receive_from(timeout=5) == '{"n": 1}'
    await get_user_model().objects.filter(pk=cast["alice"].pk).aupdate(is_active=False)
    monkeypatch.setattr(consumers, "ACCESS_RECHECK_SECONDS", 0.0)
    await publish_many(layer, [(group, {"type": "run.frame", "text": '{"n": 2}'})])
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    await communicator.wait()
