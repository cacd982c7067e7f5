"""R-RUN-5: a websocket client that drops at random points, two tabs, and a Redis restart mid-run.

The client does what the browser does: remember the last sequence number per run, send
``{"resume": {run: seq}, "since_run": run}`` on reconnect, and drop any (run, seq) it has applied.
What it assembles must be exactly the stored final text, with every sequence number seen once.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
import websockets

from chatapp.models import Conversation, Run
from tests.durable.harness import wait_run
from tests.integration.client import LiveClient, session_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

# The echo answer quotes up to 200 characters of this: about 140 word-sized tokens, 9 s at 15/s.
LONG = "Stream this slowly: " + " ".join(str(i % 10) for i in range(100))
END = ("run_finished", "run_failed")


@dataclass
class ResumingClient:
    """The browser's websocket logic: apply each (run, seq) once, resume from the last one."""

    client: LiveClient
    conversation_id: int
    applied: dict[int, dict[int, dict[str, Any]]] = field(default_factory=dict)
    connects: int = 0
    duplicates_dropped: int = 0

    def last(self, run: int) -> int:
        return max(self.applied.get(run, {}), default=0)

    def resume_message(self, run: int | None) -> str:
        if run is None:
            return json.dumps({"resume": {}})
        return json.dumps({"resume": {str(run): self.last(run)}, "since_run": run})

    def apply(self, frame: dict[str, Any]) -> bool:
        """Returns True when the run ended."""
        if "run" not in frame or "seq" not in frame:
            return False
        seen = self.applied.setdefault(frame["run"], {})
        if frame["seq"] in seen:
            self.duplicates_dropped += 1
        seen[frame["seq"]] = frame
        return frame["type"] in END

    async def connect(self, run: int | None):
        self.connects += 1
        ws = await self.client.ws(self.conversation_id)
        await ws.send(self.resume_message(run))
        return ws

    def text(self, run: int) -> str:
        frames = [self.applied[run][s] for s in sorted(self.applied[run])]
        return "".join(f["data"]["text"] for f in frames if f["type"] == "delta")

    def assert_no_gap(self, run: int) -> None:
        seqs = sorted(self.applied[run])
        assert seqs == list(range(1, seqs[-1] + 1)), f"gap in {seqs}"


async def until_run_id(conversation_id: int, timeout: float = 30) -> int:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        run = await asyncio.to_thread(lambda: Run.objects.filter(conversation_id=conversation_id).first())
        if run is not None:
            return run.pk
        await asyncio.sleep(0.02)
    raise AssertionError("no run was created")


async def read_until_end(reader: ResumingClient, ws, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while True:
            if reader.apply(json.loads(await ws.recv())):
                return


def start(cast, demo_tools, durable_stack, text: str):
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    client = LiveClient(durable_stack.base_url, session_for(cast["alice"]))
    return convo, client


def test_a_client_dropped_at_random_points_resumes_without_gap_or_duplicate(cast, demo_tools, durable_stack):
    durable_stack.ensure_worker()
    convo, client = start(cast, demo_tools, durable_stack, LONG)
    reader = ResumingClient(client, convo.pk)
    rng = random.Random(20260718)

    async def scenario() -> tuple[int, int]:
        ws = await reader.connect(None)
        response = await asyncio.to_thread(client.send, convo.pk, LONG)
        assert response.status_code == 200, response.text
        run = await until_run_id(convo.pk)
        drops = 0
        while True:
            try:
                # Read for a random while, then drop the connection without a close handshake.
                await read_until_end(reader, ws, rng.uniform(0.03, 0.3))
                await ws.close()
                return run, drops
            except TimeoutError:
                ws.transport.abort()
                drops += 1
                ws = await reader.connect(run)

    run_id, drops = asyncio.run(scenario())
    run = wait_run(run_id)
    assert run.status == "succeeded"
    assert drops >= 20, f"only {drops} drops: the stream was too fast for this test"
    reader.assert_no_gap(run_id)
    assert reader.text(run_id) == run.final_text
    assert reader.applied[run_id][reader.last(run_id)]["data"]["text"] == run.final_text


def test_two_tabs_on_one_conversation_both_get_every_frame_live(cast, demo_tools, durable_stack):
    durable_stack.ensure_worker()
    convo, client = start(cast, demo_tools, durable_stack, LONG)
    tabs = [ResumingClient(client, convo.pk), ResumingClient(client, convo.pk)]

    async def scenario() -> int:
        sockets = [await tab.connect(None) for tab in tabs]
        for ws in sockets:
            assert json.loads(await ws.recv())["type"] == "replay_done"  # nothing stored yet
        await asyncio.to_thread(client.send, convo.pk, "Two tabs, one stream")
        await asyncio.gather(*(read_until_end(t, ws, 60) for t, ws in zip(tabs, sockets, strict=True)))
        for ws in sockets:
            await ws.close()
        return await until_run_id(convo.pk)

    run_id = asyncio.run(scenario())
    run = wait_run(run_id)
    for tab in tabs:
        assert tab.duplicates_dropped == 0 and tab.connects == 1  # everything arrived live, once
        tab.assert_no_gap(run_id)
        assert tab.text(run_id) == run.final_text
    assert sorted(tabs[0].applied[run_id]) == sorted(tabs[1].applied[run_id])


def test_after_a_redis_restart_clients_reconnect_and_back_fill(cast, demo_tools, durable_stack):
    durable_stack.ensure_worker()
    convo, client = start(cast, demo_tools, durable_stack, LONG)
    reader = ResumingClient(client, convo.pk)
    events: list[str] = []

    async def reconnect(run: int):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:
            try:
                return await reader.connect(run)
            except (OSError, websockets.InvalidStatus, websockets.ConnectionClosed) as exc:
                events.append(f"connect failed: {type(exc).__name__}")
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def scenario() -> int:
        ws = await reader.connect(None)
        await asyncio.to_thread(client.send, convo.pk, LONG)
        run = await until_run_id(convo.pk)
        while reader.last(run) < 10:
            reader.apply(json.loads(await ws.recv()))
        await asyncio.to_thread(durable_stack.kill_redis)
        await asyncio.sleep(0.5)
        await asyncio.to_thread(durable_stack.start_redis)
        events.append("redis restarted")
        while True:
            try:
                await read_until_end(reader, ws, 3)
                break
            except websockets.ConnectionClosed as exc:
                events.append(f"socket closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})")
            except TimeoutError:
                events.append("no frame for 3 s on the old socket")
                ws.transport.abort()
            ws = await reconnect(run)
        await ws.close()
        return run

    run_id = asyncio.run(scenario())
    run = wait_run(run_id, timeout=60)
    print("redis restart:", events)
    assert run.status == "succeeded", (run.status, run.error_class, run.error)
    reader.assert_no_gap(run_id)
    assert reader.text(run_id) == run.final_text
