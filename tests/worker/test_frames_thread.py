"""The live frames' writes have a thread of their own (``WorkerRuntime.db_frames``): when every DB
thread is busy (a burst of run starts taking leases and reading contexts, or of run ends storing
their last round), a stream's frames are still stored and sent. Before, they queued behind that work:
200 runs at 20 tokens/s, the first and last second's token lag p99 1.5-1.8 s and 3.2-3.6 s
(docs/performance.md, session 14)."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import sync_to_async

from chatapp import frames
from chatapp.models import RunEvent
from chatapp.worker.publisher import LiveFrame
from chatapp.worker.runtime import WorkerRuntime
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_frame_is_stored_while_every_db_thread_is_busy(cast, settings):
    settings.DELTA_DB = "default"
    run = make_run(cast["alice"], status="running")
    runtime = WorkerRuntime()
    gate = threading.Event()
    busy = [runtime.db_executor.submit(gate.wait, 30) for _ in range(runtime.db_executor._max_workers)]
    try:
        frame = LiveFrame(run.pk, 1000, "delta", {"text": "still flowing"}, frames.group(run.conversation_id))
        runtime.run(runtime.frames.put(frame), timeout=10)  # TimeoutError if it waited for a DB thread
        assert not any(f.done() for f in busy)  # the DB threads were busy all along
        stored = RunEvent.objects.get(run=run, seq=1000)
        assert stored.payload == {"text": "still flowing"} and not stored.durable
    finally:
        gate.set()
        runtime.run(sync_to_async(lambda: None)(), timeout=10)
        runtime.close()
