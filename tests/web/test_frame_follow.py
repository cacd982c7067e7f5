"""``frame_follow.Follower`` on a channel layer without the frame bus (the in-memory layer: no
Redis), the path of the SSE reader and ``manage.py chat`` when the app runs without Redis. The bus
path is covered with a real Redis by tests/integration/test_follow_wakeups.py and the embedded
``manage.py chat`` tests."""

from __future__ import annotations

import asyncio

from channels.layers import get_channel_layer

from chatapp import frame_bus, frames
from chatapp.frame_follow import Follower


async def test_a_follower_takes_the_frames_of_the_group(in_memory_channel_layer):
    live = Follower(7, keep_frames=True)
    await live.join()
    assert not frame_bus.supports(live.layer) and live.channel
    assert await live.next(timeout=0.05) == {}
    await frames.publish(7, [frames.frame(1, 1, frames.Kind.DELTA, {"text": "a"})])
    await frames.publish(8, [frames.frame(2, 1, frames.Kind.DELTA, {"text": "other"})])
    # The worker sends its frames encoded once (fanout.publish_many); frames.publish the frame itself.
    await get_channel_layer().group_send(frames.group(7), {"type": frames.MESSAGE_TYPE, "text": '{"run": 1, "seq": 2}'})
    assert (await live.next(timeout=1))["data"] == {"text": "a"}
    assert await live.next(timeout=1) == {"run": 1, "seq": 2}
    assert await live.next(timeout=0.05) == {}
    await live.close()
    assert live.channel not in get_channel_layer().groups.get(frames.group(7), {})  # left the group


async def test_a_waking_follower_wakes_once_per_message(in_memory_channel_layer):
    live = Follower(7)
    await live.join()
    assert await live.wake(0.05) is False
    await frames.publish(7, [frames.frame(1, 1, frames.Kind.DELTA, {"text": "a"})])
    assert await live.wake(1) is True
    assert await live.wake(0.05) is False
    await live.close()


async def test_a_broken_bus_subscription_wakes_a_waker_once_and_ends_a_taker_s_frames():
    waker, taker = Follower(7), Follower(7, keep_frames=True)
    for live in (waker, taker):
        live.on_bus = True  # as after frame_bus.bus().join: the bus calls _received and _lost
    await taker._received('{"run": 1, "seq": 1}')
    for live in (waker, taker):
        await live._lost()
        assert live.on_bus is False  # close() does not leave a subscription that is gone
    assert await waker.wake(0.05) is True  # read the stored events now: frames may have been lost
    assert await waker.wake(0.05) is False  # then poll
    assert await taker.next(timeout=0.05) == {"run": 1, "seq": 1}
    assert await asyncio.wait_for(taker.next(timeout=0.05), 1) == {}  # none comes any more
