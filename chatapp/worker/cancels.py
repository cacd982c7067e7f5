"""One watcher per worker process answers "was this run stopped?" for every run it drives.

A stop reaches the worker through Redis: ``request_cancel`` publishes the run id on the deployment's
cancel channel once its transaction commits, and the watcher, subscribed while it has runs, sets
the run's event at once (the driver cancels the agent task on it; the engine also checks at every
stream event). Asking the database instead cost a query every 0.25 s and up to 0.55 s of delay. A
publish can be lost (Redis restarting, a worker reconnecting), so the watcher still reads the
``cancel_requested`` flags of all its runs in one query every ``SAFETY_POLL`` s while it has any.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

log = logging.getLogger(__name__)
SAFETY_POLL = 2.0
RETRY = 1.0


class CancelWatcher:
    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.watched: dict[int, int] = {}  # run id -> number of recorders watching it
        self.cancelled: set[int] = set()
        self.events: dict[int, asyncio.Event] = {}
        self._poll_task: asyncio.Task | None = None
        self._listen_task: asyncio.Task | None = None

    def watch(self, run_id: int) -> asyncio.Event:
        self.watched[run_id] = self.watched.get(run_id, 0) + 1
        self.runtime.busy()
        event = self.events.setdefault(run_id, asyncio.Event())
        loop = asyncio.get_running_loop()
        if self._poll_task is None or self._poll_task.done():
            self._poll_task = loop.create_task(self._poll())
        if self._listen_task is None or self._listen_task.done():
            self._listen_task = loop.create_task(self._listen())
        return event

    def unwatch(self, run_id: int) -> None:
        left = self.watched.get(run_id, 0) - 1
        if left > 0:
            self.watched[run_id] = left
        else:
            self.watched.pop(run_id, None)
            self.cancelled.discard(run_id)
            self.events.pop(run_id, None)

    def mark(self, run_ids: set[int]) -> None:
        for run_id in run_ids & set(self.watched):
            self.cancelled.add(run_id)
            self.events[run_id].set()

    async def _poll(self) -> None:
        while self.watched:
            await asyncio.sleep(SAFETY_POLL)
            try:
                self.mark(set(await self.runtime.db(_cancelled_among, list(self.watched))))
            except Exception:  # noqa: BLE001 - a failed look is retried on the next tick
                log.warning("checking for stopped runs failed", exc_info=True)

    async def _listen(self) -> None:
        """Subscribed for the life of the process (an idle subscription costs nothing)."""
        import redis.asyncio as aioredis
        from django.conf import settings

        from chatapp.stop_signal import channel_name

        while True:
            client = aioredis.from_url(str(settings.REDIS_URL), socket_timeout=None)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(channel_name())
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            with contextlib.suppress(ValueError):
                                self.mark({int(message["data"])})
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis away: the safety poll covers the gap
                log.info("cancel channel unavailable; retrying in %.0f s", RETRY, exc_info=True)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            await asyncio.sleep(RETRY)

    async def close(self) -> None:
        for task in (self._poll_task, self._listen_task):
            if task is not None:
                task.cancel()


def _cancelled_among(ids: list[int]) -> list[int]:
    from chatapp.models import Run

    return list(Run.objects.filter(pk__in=ids, cancel_requested=True).values_list("pk", flat=True))
