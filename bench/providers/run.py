"""Benchmark: the Chat Completions adapter vs a bare httpx-sse loop over the same bytes.

Both read a 2,000-chunk stream (1,500 text deltas, then one tool call in 500 argument fragments,
shaped like OpenAI's chunks) from the same local HTTP server. The bare loop does what any client
must at minimum: ``aconnect_sse`` + ``aiter_sse`` + ``json.loads`` per event. The adapter does all
of its work: request building, SSE with the final-frame flush and the deadline check, accumulation,
delta events, finalisation. Goal: adapter throughput >= 0.7 x bare. Not a test. Then it prints the
input-token cost of a recorded 6-round tool loop with and without prompt caching (``cache_cost``).

    .venv/bin/python -m bench.providers.run [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
from httpx_sse import aconnect_sse

from agent.messages import Message
from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from agent.providers.types import ModelRequest, ResponseDone

CHUNKS = 2000


def make_body(chunks: int = CHUNKS) -> bytes:
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1727346178,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_5050236cbd",
    }
    frames = []
    text_chunks = chunks * 3 // 4
    for n in range(chunks):
        if n < text_chunks:
            delta: dict = {"content": f" word{n}"}
        elif n == text_chunks:
            call = {
                "index": 0,
                "id": "call_bench",
                "type": "function",
                "function": {"name": "write_file", "arguments": ""},
            }
            delta = {"tool_calls": [call]}
        elif n == chunks - 1:
            frames.append(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}],
                }
            )
            continue
        else:
            piece = '{"content": "' if n == text_chunks + 1 else ('"}' if n == chunks - 2 else f"line {n} ")
            delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        frames.append(
            {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
        )
    out = [f"data: {json.dumps(f)}\n\n" for f in frames]
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


async def serve(body: bytes) -> asyncio.Server:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\nconnection: close\r\n\r\n"
    )

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in request_head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        await reader.readexactly(length)
        writer.write(head)
        for start in range(0, len(body), 16384):  # flushed in socket-sized pieces, like a real server
            writer.write(body[start : start + 16384])
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def bare(http: httpx.AsyncClient, url: str) -> int:
    count = 0
    async with aconnect_sse(http, "POST", url, json={"model": "m", "messages": [], "stream": True}) as source:
        async for event in source.aiter_sse():
            if event.data.startswith("[DONE]"):
                break
            json.loads(event.data)
            count += 1
    return count


async def adapter(provider, request: ModelRequest) -> int:
    count = 0
    async for event in provider.stream(request):
        count += 1
        if isinstance(event, ResponseDone):
            assert event.response.tool_calls[0].arguments is not None
    return count


async def main(rounds: int) -> None:
    body = make_body()
    server = await serve(body)
    port = server.sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    request = ModelRequest((Message.user("bench"),))
    async with httpx.AsyncClient() as http:
        settings = ProviderSettings(
            name="bench", kind="openai_chat", base_url=base, model="m", preset="openai"
        )
        provider = build_provider(settings, http)
        timings: dict[str, list[float]] = {"bare": [], "adapter": []}
        for _ in range(rounds + 2):  # the first two rounds warm up and are dropped
            for name in ("bare", "adapter"):
                started = time.perf_counter()
                await (
                    bare(http, base + "/chat/completions") if name == "bare" else adapter(provider, request)
                )
                timings[name].append(time.perf_counter() - started)
    server.close()
    print(f"stream: {CHUNKS} chunks, {len(body) / 1e6:.2f} MB, {rounds} rounds, median")
    medians = {name: statistics.median(values[2:]) for name, values in timings.items()}
    for name, seconds in medians.items():
        print(
            f"  {name:8s} {CHUNKS / seconds:10,.0f} chunks/s  {len(body) / seconds / 1e6:6.1f} MB/s  ({seconds * 1e3:.1f} ms)"
        )
    print(f"  ratio adapter/bare: {medians['bare'] / medians['adapter']:.2f} (goal >= 0.70)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    asyncio.run(main(parser.parse_args().rounds))
    from bench.providers import cache_cost

    print("\nprompt caching (bench.providers.cache_cost, default prices; see its --help):")
    cache_cost.main([])
