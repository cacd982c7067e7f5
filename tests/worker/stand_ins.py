"""What the recorder's parts take from ``WorkerRuntime``, on the test's own event loop: ORM calls in a
thread (as the runtime's DB threads make them), the real cross-run frame batch on an in-memory channel
layer, and a record of which runs are watched for a stop (the real watcher subscribes to Redis)."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import InMemoryChannelLayer

from chatapp.worker.frame_batch import FrameBatcher


def _in_thread(fn: Any, args: tuple[Any, ...]) -> Any:
    from django.db import connections

    try:
        return fn(*args)
    finally:
        connections.close_all()  # "deltas" too: an open one would keep the test database in use


class Cancels:
    def __init__(self) -> None:
        self.watched: dict[int, int] = {}
        self.cancelled: set[int] = set()
        self.events: dict[int, asyncio.Event] = {}

    def watch(self, run_id: int) -> asyncio.Event:
        self.watched[run_id] = self.watched.get(run_id, 0) + 1
        return self.events.setdefault(run_id, asyncio.Event())

    def unwatch(self, run_id: int) -> None:
        self.watched[run_id] -= 1
        if not self.watched[run_id]:
            del self.watched[run_id]


class Runtime:
    def __init__(self, layer: InMemoryChannelLayer) -> None:
        self.lag = 0.0
        self.publish_slots = asyncio.Semaphore(4)
        self.end_slots = asyncio.Semaphore(2)
        self.frames = FrameBatcher(self, layer)
        self.cancels = Cancels()

    async def db(self, fn: Any, *args: Any) -> Any:
        return await asyncio.to_thread(_in_thread, fn, args)

    db_frames = db  # the real runtime's frames have a thread of their own (test_frames_thread.py)


async def listen(layer: InMemoryChannelLayer, group: str) -> str:
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return channel


async def received(layer: InMemoryChannelLayer, channel: str, count: int) -> list[dict[str, Any]]:
    """The next ``count`` frames sent to the channel, decoded (fails after 10 s without one)."""
    import json

    out = []
    for _ in range(count):
        message = await asyncio.wait_for(layer.receive(channel), timeout=10)
        assert message["type"] == "run.frame"
        out.append(json.loads(message["text"]))
    return out
