"""Bad input (issue 15): a model that sends 10,000 one-character chunks a second.

The worker coalesces a run's deltas per window, so the frames stored, published and sent to the page
do not follow the model's chunk rate; the whole answer is stored; the worker's memory stays bounded;
and another user's stream beside the flood keeps its pace.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from chatapp.models import Conversation, Message, ProviderConfig, Run, RunEvent
from chatapp.worker.coalescer import MAX_WINDOW
from tests.integration import flood_model
from tests.integration.client import LiveClient, frames_until, session_for

pytestmark = pytest.mark.django_db(transaction=True)

CHUNKS, RATE = 20_000, 10_000  # two seconds of the 10,000 one-byte chunks a second
ENDED = ("run_finished", "run_failed")


@pytest.fixture(scope="module")
def flood_url():
    with flood_model.serve() as url:
        yield url


@pytest.fixture
def flood(live_stack, flood_url):
    return ProviderConfig.objects.create(name="flood", base_url=flood_url, model="flood", preset="demo")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class _PeakRss:
    """The worker's resident memory, read every 20 ms while the flood runs (the peak, not a sample)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, _rss_mb(pid), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_mb(self.pid))

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _stats(flood_url: str) -> list[dict]:
    import httpx

    return httpx.get(flood_url.removesuffix("/v1") + "/stats", timeout=10).json()


async def _follow(client: LiveClient, convo: Conversation, text: str) -> list[tuple[float, dict]]:
    """Send ``text`` and read the conversation's frames until its run ends: (arrival time, frame)."""
    async with client.ws(convo.pk) as ws:
        await ws.send('{"resume": {}}')
        await frames_until(ws, lambda f: f["type"] == "replay_done")
        response = await asyncio.to_thread(client.send, convo.pk, text)
        assert response.status_code == 200, response.text
        seen: list[tuple[float, dict]] = []

        async def read() -> None:
            while not seen or seen[-1][1]["type"] not in ENDED:
                frame = (await frames_until(ws, lambda f: True))[0]
                seen.append((time.time(), frame))

        await asyncio.wait_for(read(), 120)
        return seen


def test_a_flood_of_one_byte_chunks_is_coalesced_and_stored_whole(cast, flood, flood_url, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"], provider=flood)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    with _PeakRss(live_stack.procs["worker"].pid) as rss:
        before = rss.peak
        frames = [f for _, f in asyncio.run(_follow(client, convo, f"flood chunks={CHUNKS} rate={RATE}"))]
    (sent,) = _stats(flood_url)
    expected = flood_model.expected_flood(CHUNKS)

    # The model did flood: all its chunks went out at thousands a second (a reader that fell behind
    # would have slowed it through TCP, and the test would not be the issue's).
    assert sent["chunks"] == CHUNKS and sent["chunks"] / sent["seconds"] > RATE / 4, sent
    assert frames[-1]["type"] == "run_finished", frames[-1]
    deltas = [f for f in frames if f["type"] == "delta"]
    # Nothing lost: the page, the stored answer and the run hold every character, in order.
    assert "".join(f["data"]["text"] for f in deltas) == expected
    run = Run.objects.get(conversation=convo)
    assert run.status == "succeeded" and run.final_text == expected
    assert Message.objects.get(conversation=convo, role="assistant").content == expected
    # The frames follow the coalescing window, not the chunk rate: ~2 s of stream in windows of
    # 50 ms or more is a few dozen frames, against 20,000 chunks.
    stored = RunEvent.objects.filter(run=run, type="delta").count()
    print(f"flood: {sent}, {len(deltas)} delta frames, worker RSS {before:.0f} -> peak {rss.peak:.0f} MB")
    assert len(deltas) == stored and stored <= 200, (len(deltas), stored)
    # Bounded memory: the flood is read as it comes, never queued whole (20,000 chunks of ~150 bytes of
    # SSE each are 3 MB on the wire; as Python objects queued per chunk, several times that).
    assert rss.peak - before < 64, (before, rss.peak)


def _lags_ms(frames: list[tuple[float, dict]]) -> list[float]:
    """Each stamped token's lag: its arrival on the page minus its send time at the model."""
    lags = []
    for arrived, frame in frames:
        if frame["type"] == "delta":
            for stamp in frame["data"]["text"].split("|")[1:]:
                lags.append(arrived * 1000 - float(stamp))
    return lags


@pytest.mark.alone  # compares token lag with and without the flood: another process's load would move it
def test_a_flood_does_not_slow_another_users_stream(cast, flood, flood_url, live_stack):
    """Bob's paced stream (100 tokens at 50 a second) alone, then beside three floods."""
    bob = LiveClient(live_stack.base_url, session_for(cast["bob"]))
    # Three floods (one run in flight per user): ~2 cores of parsing for a worker that has one.
    users = [cast["alice"], *(get_user_model().objects.create_user(n) for n in ("carol", "dave"))]
    flooders = [(LiveClient(live_stack.base_url, session_for(user)), user) for user in users]
    paced = "paced tokens=100 rate=50"

    def bobs_lags() -> list[float]:
        convo = Conversation.objects.create(owner=cast["bob"], provider=flood)
        frames = asyncio.run(_follow(bob, convo, paced))
        assert frames[-1][1]["type"] == "run_finished", frames[-1]
        lags = _lags_ms(frames)
        assert len(lags) == 100
        return lags

    bobs_lags()  # warms the stack (first requests, connections); not measured
    alone = bobs_lags()

    async def beside_floods() -> tuple[list[list[tuple[float, dict]]], list[float]]:
        convos = [
            await asyncio.to_thread(Conversation.objects.create, owner=user, provider=flood)
            for _, user in flooders
        ]
        floods = [
            _follow(client, c, f"flood chunks={CHUNKS} rate={RATE}")
            for (client, _), c in zip(flooders, convos, strict=True)
        ]
        *flooded, lags = await asyncio.gather(*floods, asyncio.to_thread(bobs_lags))
        return flooded, lags

    # Measured beside the floods up to twice: a stall of the machine's own (PostgreSQL's checkpoint
    # after the suite's main tier once gave p95 900 ms) is not the worker's fairness, while a worker that
    # lets a flood hold its loop fails every time (without the engine's turns: see docs/performance.md,
    # session 23, and session 27 for this machine).
    for attempt in (1, 2):
        flooded, beside = asyncio.run(beside_floods())
        assert [frames[-1][1]["type"] for frames in flooded] == ["run_finished"] * len(users)
        p50 = (statistics.median(alone), statistics.median(beside))
        p95 = (statistics.quantiles(alone, n=20)[-1], statistics.quantiles(beside, n=20)[-1])
        print(
            f"bob's token lag alone / beside three floods (attempt {attempt}): p50 {p50[0]:.1f} / "
            f"{p50[1]:.1f} ms, p95 {p95[0]:.1f} / {p95[1]:.1f} ms"
        )
        # Not slowed: Bob's tokens wait at most the coalescing window more beside the floods, which
        # widens with the worker's load up to MAX_WINDOW by design (session 14; on a slower machine the
        # floods take more of the worker's core, and the window with them); and the slowest twentieth
        # never waits behind a flood's chunks (without the turns: p95 +120 ms and more).
        if p50[1] <= p50[0] + MAX_WINDOW * 1000 and p95[1] <= p95[0] + 100:
            break
    kinds = [s["kind"] for s in _stats(flood_url)]
    assert kinds.count("flood") == len(users) * attempt, kinds
    assert p50[1] <= p50[0] + MAX_WINDOW * 1000 and p95[1] <= p95[0] + 100, (p50, p95)
