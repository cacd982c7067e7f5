"""The stack's floor for a send: what the least a chat app's send costs here, beside what ours costs.

Target 1 of issue 15 asks for a send to reach the model within 8 ms (one stream) and for the first
token within 50 ms with 20 simultaneous senders. Before any of clearloop's own work, a send through
this stack (daphne, Django's request handling with the app's middleware, a session, a committed
transaction on PostgreSQL) has a cost of its own on the machine at hand. This measures it: a daphne
process of its own serves ``bench/floors`` (the app's settings and middleware, one view that checks
who asks, reads the conversation and stores the message in a committed transaction, then answers 204:
no run, no queue, no limits, no audit, no page). C users POST at the same moment; printed per C: the
POST's round trip p50/p95 and daphne's and PostgreSQL's CPU per POST. The Celery hop is measured in
every browser cell already (the ``received`` mark of the split). Not a test.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.browser.procs import Sampler
from bench.browser.stats import pct
from chatapp.devstack import daphne_endpoint, free_port, port_open, wait_for

ROOT = Path(__file__).resolve().parents[2]


async def _batch(base: str, users: list[tuple[str, int]], timeout: float) -> list[float]:
    async def one(client: httpx.AsyncClient, session: str, conversation: int) -> float:
        started = time.perf_counter()
        response = await client.post(
            f"/floor/send/{conversation}/", data={"message": "floor"}, cookies={"sessionid": session}
        )
        took = (time.perf_counter() - started) * 1000
        if response.status_code != 204:
            raise SystemExit(f"floor send answered {response.status_code}: {response.text[:300]}")
        return took

    limits = httpx.Limits(max_connections=1000)
    async with httpx.AsyncClient(base_url=base, timeout=timeout, limits=limits) as client:
        return list(await asyncio.gather(*(one(client, s, c) for s, c in users)))


def measure(target: Any, cells: list[int], batches: int, timeout: float) -> list[dict[str, Any]]:
    """The floor on ``target``'s database and sessions (its users, new conversations of their own)."""
    port = free_port()
    env = target.env() | {"DJANGO_SETTINGS_MODULE": "bench.floors.settings", "PYTHONPATH": str(ROOT)}
    log = open(target.data_dir / "floor.log", "ab")  # noqa: SIM115 - owned by the child
    # The app's accept queue too (devstack.LISTEN_BACKLOG): C users connect at the same moment.
    argv = [sys.executable, "-m", "daphne", "-e", daphne_endpoint(port), "bench.floors.asgi:application"]
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    rows = []
    try:
        wait_for(lambda: port_open("127.0.0.1", port), 60, "the floor server", proc)
        base = f"http://127.0.0.1:{port}"
        for c in cells:
            ids = ",".join(str(uid) for uid, _ in target.users[:c])
            conversations = target.seed("conversations", ids)["conversations"]
            users = [(s, cid) for (_, s), cid in zip(target.users[:c], conversations, strict=True)]
            asyncio.run(_batch(base, users, timeout))  # warm-up
            db = target.db_url.rpartition("/")[2]
            sampler = Sampler({"daphne": proc.pid}, target.db_url, db).start()
            took: list[float] = []
            for _ in range(max(batches, -(-30 // c))):  # at least 30 POSTs per cell
                took += asyncio.run(_batch(base, users, timeout))
            used = sampler.stop()
            rows.append(
                {
                    "c": c,
                    "posts": len(took),
                    "p50_ms": pct(took, 50),
                    "p95_ms": pct(took, 95),
                    "cpu_ms_per_post": {k: round(v / len(took), 2) for k, v in used.items()},
                }
            )
    finally:
        proc.terminate()
        proc.wait(10)
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_ms_per_post"].items())
        print(
            f"send floor (authenticated POST, one INSERT committed, 204), C={r['c']}: "
            f"p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms over {r['posts']} POSTs; CPU per POST: {cpu}"
        )
