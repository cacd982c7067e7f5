"""The worker's CPU per streamed chunk: parsing the model's stream, the engine and the recorder. Not a test.

A run of the worker's real engine and recorder (``tests/worker/scenario.py``, PostgreSQL, production
settings) whose model is the real OpenAI Chat adapter reading ``--chunks`` one-character chunks of
Server-Sent Events, handed over in 4 KB pieces as a socket would (httpx's ``MockTransport``: no
socket, so what is measured is the parsing and everything after it, not aiohttp's reads). Prints the
CPU per chunk (the run's CPU less that of a one-chunk run, over the chunks), the p50 over
``--runs``; ``--profile FILE`` writes a cProfile of the measured runs. Issue 15's bad input (a model
sending 10,000 one-byte chunks a second) costs the worker this much per chunk; a real model's stream
pays it per token.

    .venv/bin/python -m bench.stream.run [--chunks 20000] [--runs 5] [--profile /tmp/stream.prof]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
PIECE = 4096


def sse_body(chunks: int) -> bytes:
    from tests.integration.flood_model import sse_event

    parts = [sse_event({"role": "assistant"})]
    parts += [sse_event({"content": str(i % 10)}) for i in range(chunks)]
    parts += [sse_event({}, "stop"), b"data: [DONE]\n\n"]
    return b"".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", default="clearloop_streambench")
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.sendview.run import migrated_owner

    owner = migrated_owner(args.db, "streambench")
    import httpx
    from django.conf import settings

    from agent.loop import LoopSettings
    from agent.providers.registry import ProviderSettings, build_provider
    from tests.loop.loop_doubles import FuncToolbox
    from tests.worker.scenario import drive, new_run

    def provider(body: bytes) -> Any:
        async def pieces():
            for at in range(0, len(body), PIECE):
                yield body[at : at + PIECE]

        def answer(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=pieces())

        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        model = ProviderSettings(
            name="flood",
            kind="openai_chat",
            base_url="http://model.invalid/v1",
            model="flood",
            api_key="sk-none",
            preset="openai",
        )
        return build_provider(model, http)

    def one(body: bytes, expected: int) -> float:
        run = new_run(owner, "flood")
        t0 = time.process_time()
        step = drive(
            run, provider(body), FuncToolbox({}), LoopSettings(), coalesce_ms=settings.STREAM_COALESCE_MS
        )
        spent = time.process_time() - t0
        assert type(step).__name__ == "NextStepFinalOutput" and len(step.text) == expected, step
        return spent

    small, big = sse_body(1), sse_body(args.chunks)
    for _ in range(2):  # warm-up: imports, the pool, the first rows
        one(small, 1), one(big, args.chunks)
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
    per_chunk = []
    for _ in range(args.runs):
        base = one(small, 1)
        if profiler:
            profiler.enable()
        spent = one(big, args.chunks)
        if profiler:
            profiler.disable()
        per_chunk.append((spent - base) / args.chunks * 1e6)
    if profiler:
        profiler.dump_stats(args.profile)
    per_chunk.sort()
    print(
        f"CPU per streamed chunk over {args.runs} runs of {args.chunks} chunks (this process: parsing, the "
        f"engine, the recorder): p50 {per_chunk[len(per_chunk) // 2]:.1f} µs "
        f"(min {per_chunk[0]:.1f}, max {per_chunk[-1]:.1f})"
    )


if __name__ == "__main__":
    main()
