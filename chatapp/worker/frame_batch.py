"""One database write and one pipelined publish per tick for the live frames of every run of a worker.

A run's recorder hands over a frame and waits until it is stored and published, exactly as when it
wrote and published it alone, so its order with the run's durable events is unchanged. What differs
is that while one write is in flight, the frames of every run queue up, and the next write takes
them all: at one stream nothing waits, at a hundred streams one INSERT and two Redis round trips
carry hundreds of frames (group commit). The frame is JSON-encoded once (``LiveFrame.message``), and
daphne forwards that text to every socket without decoding it (``ConversationConsumer.run_frame``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from chatapp.worker import crash, store
from chatapp.worker.fanout import publish_many
from chatapp.worker.publisher import LiveFrame

log = logging.getLogger(__name__)


class FrameBatcher:
    def __init__(self, runtime: Any, layer: Any) -> None:
        self.runtime = runtime
        self.layer = layer
        self._queue: list[tuple[LiveFrame, asyncio.Future[None]]] = []
        self._task: asyncio.Task | None = None

    async def put(self, frame: LiveFrame) -> None:
        """Returns once the frame is stored (raises if storing failed) and its publish was tried."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((frame, done))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain())
        await done

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            frames = [frame for frame, _ in batch]
            try:
                await self.runtime.db_frames(store.append_events, [_row(f) for f in frames])
            except Exception:  # noqa: BLE001 - one bad row must not fail the other runs' frames
                log.warning(
                    "writing %s frames at once failed; writing them one by one", len(frames), exc_info=True
                )
                batch = await self._one_by_one(batch)
                frames = [frame for frame, _ in batch]
            for frame in frames:
                crash.after_stored(frame.kind, frame.payload)
            try:
                await publish_many(self.layer, [(f.group, f.message()) for f in frames])
            except Exception:  # noqa: BLE001 - Redis down: the frames are stored; clients back-fill
                log.warning("publishing %s frames failed", len(frames), exc_info=True)
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def _one_by_one(
        self, batch: list[tuple[LiveFrame, asyncio.Future[None]]]
    ) -> list[tuple[LiveFrame, asyncio.Future[None]]]:
        """The frames that could be stored; each other run gets its own error."""
        stored = []
        for frame, done in batch:
            try:
                await self.runtime.db_frames(store.append_events, [_row(frame)])
                stored.append((frame, done))
            except Exception as exc:  # noqa: BLE001 - handed to the run that made this frame
                done.set_exception(exc)
        return stored


def _row(frame: LiveFrame) -> tuple[int, int, str, dict[str, Any]]:
    return frame.run_id, frame.seq, frame.kind, frame.payload
