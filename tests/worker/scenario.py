"""A run driven in process through the worker's real recorder and store, for storage tests.

The engine (``run_agent``) runs with a scripted model and in-test tools; its events go through the
real ``RunRecorder`` (redaction, delta folding, durable rows first, the run's ``Sequence``) into the
test database. Only the runtime is a stand-in: its "DB threads" run each write inline, and frames are
stored one at a time instead of batched. ``stored_bytes`` measures what a run left in PostgreSQL.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, connections

from agent.loop import AllowAll, LoopSettings, run_agent
from agent.state import RunState
from chatapp.models import Conversation, Message, Run
from chatapp.worker import store
from chatapp.worker.context import load_run_context
from chatapp.worker.frame_batch import LiveFrame
from chatapp.worker.lease import acquire_lease


class _InlineFrames:
    runtime: Any = None

    async def put(self, frame: LiveFrame) -> None:
        await self.runtime.db(store.append_events, [(frame.run_id, frame.seq, frame.kind, frame.payload)])


class _NoCancels:
    cancelled: set[int] = set()

    def watch(self, run_id: int) -> asyncio.Event:
        return asyncio.Event()

    def unwatch(self, run_id: int) -> None:
        pass


@dataclass
class InlineRuntime:
    """What ``RunRecorder`` needs of ``WorkerRuntime``: one DB thread (so writes are in call order),
    frames stored one by one. Tests using it are transactional: that thread has its own connection."""

    lag: float = 0.0
    frames: Any = field(default_factory=_InlineFrames)
    cancels: Any = field(default_factory=_NoCancels)
    publish_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(8))
    end_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(2))
    executor: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1))

    async def db(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def __post_init__(self) -> None:
        self.frames.runtime = self

    def close(self) -> None:
        self.executor.submit(connections.close_all).result()
        self.executor.shutdown()


def new_run(owner: Any, text: str = "go") -> Run:
    from chatapp.models import ProviderConfig

    ProviderConfig.objects.get_or_create(
        name="demo", defaults={"kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    )
    convo = Conversation.objects.create(owner=owner)
    message = Message.objects.create(
        conversation=convo, role="user", content=text, payload={"role": "user", "content": text}
    )
    run = Run.objects.create(conversation=convo, provider_name="demo", model="m", user_message=message)
    message.run = run
    message.save(update_fields=["run"])
    return run


def recorder_for(run: Run, runtime: InlineRuntime, coalesce_ms: int = 0) -> Any:
    """A new segment of ``run``: its lease taken, a recorder numbering after what is stored (enter it
    with ``async with``, as the driver does). ``coalesce_ms`` 0: a frame per delta."""
    from chatapp.worker.recorder import RunRecorder

    lease = acquire_lease(run.pk)
    ctx = load_run_context(run.pk)
    return RunRecorder(runtime, run.pk, ctx.conversation_id, ctx.last_seq, coalesce_ms, lease)  # type: ignore[arg-type]


def drive(
    run: Run,
    provider: Any,
    toolbox: Any,
    settings: LoopSettings | None = None,
    db_threads: int = 1,
    coalesce_ms: int = 0,
) -> Any:
    """One segment of ``run`` through the real recorder; returns the engine's last step. ``db_threads``:
    more than one, as the worker has, lets writes of parallel calls overlap."""
    runtime = InlineRuntime(executor=ThreadPoolExecutor(db_threads))
    recorder = recorder_for(run, runtime, coalesce_ms)
    state: RunState = load_run_context(run.pk).state

    async def segment() -> Any:
        async with recorder:
            try:
                return await run_agent(
                    state, provider, toolbox, recorder, settings or LoopSettings(), AllowAll()
                )
            finally:
                await recorder.flush()

    try:
        return asyncio.run(segment())
    finally:
        runtime.close()


# Every column that can hold a run's content, by table; the audit rows are found by run_id.
_COLUMNS = {
    "chatapp_runevent": ("payload",),
    "chatapp_round": ("request", "response"),
    "chatapp_toolcall": ("arguments", "result", "definition"),
    "chatapp_message": ("content", "payload"),
    "chatapp_auditevent": ("payload",),
}


def stored_bytes(run_id: int, *, measure: str = "octet_length") -> dict[str, int]:
    """Bytes of the run's content in PostgreSQL, per table, plus the large-value table's rows the run's
    rows refer to. ``octet_length``: the values' own size; ``pg_column_size``: as stored on disk,
    after TOAST compression."""
    sizes: dict[str, int] = {}
    with connection.cursor() as cursor:
        for table, columns in _COLUMNS.items():
            total = " + ".join(f"coalesce({measure}({c}::text), 0)" for c in columns)
            cursor.execute(f"SELECT coalesce(sum({total}), 0) FROM {table} WHERE run_id = %s", [run_id])  # noqa: S608
            sizes[table] = int(cursor.fetchone()[0])
        sizes["chatapp_blob"] = _blob_bytes(cursor, run_id, measure)
    return sizes


def _blob_bytes(cursor: Any, run_id: int, measure: str) -> int:
    try:
        from chatapp.blobs import referenced_by_run
    except ImportError:  # measuring the format before large values were stored once
        return 0
    digests = referenced_by_run(run_id)
    if not digests:
        return 0
    cursor.execute(
        f"SELECT coalesce(sum({measure}(data)), 0) FROM chatapp_blob WHERE sha256 = ANY(%s)",  # noqa: S608
        [list(digests)],
    )
    return int(cursor.fetchone()[0])
