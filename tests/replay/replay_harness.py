"""Drive the real loop over real HTTP against an emulator, optionally "killing the worker" after
the Nth durable event and resuming from what was stored, the way the worker stores it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from replay_emulator_http import serve
from replay_seed import SeedFiles, start_messages

from agent.events import DURABLE, Event
from agent.loop import LoopSettings, RiskPolicy, run_agent
from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from agent.state import RunState
from chatapp.event_codec import event_from_row, event_payload, event_type
from chatapp.redaction import redact


def jsonb(value: Any) -> Any:
    """A JSON value as PostgreSQL's jsonb gives it back: object keys shorter first, then by their
    bytes (the order the key was written in is not kept). What is replayed must not depend on it."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return {k: jsonb(value[k]) for k in keys}
    if isinstance(value, list):
        return [jsonb(v) for v in value]
    return value


class WorkerDied(Exception):
    """Raised by the sink right after a durable event was stored: the process is gone."""


class StoringSink:
    """Stores durable events as the worker's recorder does (redacted, replay kept, JSON)."""

    def __init__(self, die_after: int | None = None) -> None:
        self.rows: list[tuple[str, Any]] = []
        self.events: list[Event] = []
        self.die_after = die_after
        self.dead = False

    async def emit(self, event: Event) -> None:
        if self.dead:
            raise WorkerDied("this worker is gone")  # a parallel task of the dead worker stores nothing
        self.events.append(event)
        if not isinstance(event, DURABLE):
            return
        payload = redact(event_payload(event), keep_replay=True)
        self.rows.append((event_type(event), jsonb(json.loads(json.dumps(payload, ensure_ascii=False)))))
        if self.die_after is not None and len(self.rows) == self.die_after:
            self.die_after = None
            self.dead = True
            raise WorkerDied(f"worker killed after durable event {len(self.rows)}")

    async def is_cancelled(self) -> bool:
        return False

    def stored(self) -> list[Event]:
        return [e for e in (event_from_row(kind, payload) for kind, payload in self.rows) if e is not None]


@contextlib.asynccontextmanager
async def provider_for(app: Any, kind: str, preset: str, model: str, **settings: Any) -> AsyncIterator[Any]:
    async with serve(app) as base, httpx.AsyncClient() as http:
        url = base if kind == "anthropic" else base + "/v1"
        config = ProviderSettings(
            name=preset, kind=kind, base_url=url, model=model, preset=preset, api_key="emulator-key", **settings
        )
        yield build_provider(config, http)


async def run_seed(
    provider: Any,
    *,
    die_after: int | None = None,
    settings: LoopSettings | None = None,
    history: list | None = None,
    files: SeedFiles | None = None,
    start: list | None = None,
    resume: bool = True,
) -> tuple[Any, RunState, StoringSink, SeedFiles]:
    """The seed scenario; with ``die_after`` the first worker dies there and a second one resumes
    from the stored rows only (a fresh RunState, same files), unless ``resume`` is False."""
    files = files or SeedFiles()
    sink = StoringSink(die_after)
    settings = settings or LoopSettings()
    start = start or [*start_messages()[:1], *(history or []), *start_messages()[1:]]
    state = RunState.start("seed", start)
    try:
        step = await run_agent(state, provider, files, sink, settings, RiskPolicy())
    except Exception as exc:  # noqa: BLE001 - parallel tools raise it inside an ExceptionGroup
        if not _died(exc):
            raise
        if not resume:
            return None, state, sink, files
        sink.dead = False  # the next worker takes over the same store
        state = RunState.rebuild("seed", start, sink.stored())
        step = await run_agent(state, provider, files, sink, settings, RiskPolicy())
    return step, state, sink, files


def _died(exc: BaseException) -> bool:
    if isinstance(exc, WorkerDied):
        return True
    return isinstance(exc, BaseExceptionGroup) and any(_died(e) for e in exc.exceptions)


def durable_count_of_reference(sink: StoringSink) -> int:
    return len(sink.rows)
