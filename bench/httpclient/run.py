"""Benchmark: the CPU a worker spends reading streamed answers, httpx's own transport against the
worker's model client (httpx over aiohttp, ``chatapp/worker/model_http.py``). Not a test.

Starts the fake upstream of ``bench/browser`` (one-token SSE chunks, ``delay`` ms apart), then for
each cell reads C concurrent 200-token streams with each client in this process, parsing every SSE
event as the providers do (httpx-sse, ``json.loads``), alternating the clients, and prints this
process's CPU per stream (utime + stime).

    .venv/bin/python -m bench.httpclient.run [--cells 1:10,20:10,200:50,20:0] [--repeats 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
from httpx_sse import aconnect_sse

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from chatapp.devstack import free_port, port_open, wait_for  # noqa: E402

TOKENS = 200


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def one_stream(client: httpx.AsyncClient, url: str, delay: int) -> int:
    text = f"rid={uuid.uuid4().hex} delay={delay} tokens={TOKENS}"
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}
    chunks = 0
    async with aconnect_sse(client, "POST", url, json=body) as events:
        async for event in events.aiter_sse():
            if event.data == "[DONE]":
                break
            json.loads(event.data)
            chunks += 1
    return chunks


def make_client(kind: str) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=500, max_keepalive_connections=200)
    if kind == "aiohttp":
        from chatapp.worker.model_http import ModelClient

        return ModelClient(limits=limits, timeout=600)
    return httpx.AsyncClient(limits=limits, timeout=600)


async def cell(kind: str, url: str, streams: int, delay: int) -> dict[str, float]:
    async with make_client(kind) as client:
        await asyncio.gather(*(one_stream(client, url, 0) for _ in range(3)))  # connections warm
        cpu, wall = cpu_seconds(), time.perf_counter()
        chunks = await asyncio.gather(*(one_stream(client, url, delay) for _ in range(streams)))
        cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    assert all(n > TOKENS for n in chunks), chunks  # every token chunk arrived (plus the last one)
    return {"cpu_ms_per_stream": 1000 * cpu / streams, "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="1:10,20:10,200:50,20:0", help="streams:delay_ms,...")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    port = free_port()
    upstream = subprocess.Popen([sys.executable, "-m", "bench.browser.upstream", "--port", str(port)])
    try:
        wait_for(lambda: port_open("127.0.0.1", port), 30, "the fake upstream", upstream)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        print(f"{'C':>4} {'ms/token':>8} {'client':>8} {'CPU ms/stream':>14} {'wall s':>7}")
        for spec in args.cells.split(","):
            streams, delay = (int(part) for part in spec.split(":"))
            figures: dict[str, list[float]] = {"httpx": [], "aiohttp": []}
            for _ in range(args.repeats):
                for kind in figures:  # alternated, so the machine's drift weighs on both alike
                    result = asyncio.run(cell(kind, url, streams, delay))
                    figures[kind].append(result["cpu_ms_per_stream"])
                    print(
                        f"{streams:>4} {delay:>8} {kind:>8} {result['cpu_ms_per_stream']:>14.1f} {result['wall_s']:>7.2f}"
                    )
            ratio = min(figures["aiohttp"]) / min(figures["httpx"])
            print(
                f"     C={streams} {delay} ms/token: the worker's client uses {ratio:.2f}x httpx's CPU per stream"
            )
    finally:
        upstream.terminate()
        upstream.wait(10)


if __name__ == "__main__":
    main()
