"""Property: however the bytes are cut, the assembled response and the deltas are the same.

Runs on the sans-I/O layer: an ``httpx.Response`` over an in-memory byte stream (no socket), the
shared SSE reader, and each adapter's accumulator.
"""

from __future__ import annotations

import asyncio

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_cases import CASES

from agent.providers.anthropic_stream import AnthropicAccumulator
from agent.providers.openai_chat_stream import ChatAccumulator
from agent.providers.openai_responses_stream import ResponsesAccumulator
from agent.providers.sse import iter_sse

ACCUMULATORS = {
    "openai_chat": ChatAccumulator,
    "anthropic": AnthropicAccumulator,
    "openai_responses": ResponsesAccumulator,
}


async def _assemble(kind: str, pieces: list[bytes]) -> tuple[object, list[object]]:
    async def body():
        for piece in pieces:
            yield piece

    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())
    accumulator = ACCUMULATORS[kind]()
    deltas: list[object] = []
    async for event in iter_sse(response):
        deltas += accumulator.feed(event.event, event.data)
        if accumulator.done:
            break
    final = accumulator.finish()
    return final[-1], deltas


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


BASELINES = {case.id: asyncio.run(_assemble(case.kind, [case.body])) for case in CASES}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case_index=st.integers(0, len(CASES) - 1),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=60),
    crlf=st.booleans(),
)
def test_any_chunking_gives_the_same_assembled_response(case_index, cuts, crlf):
    case = CASES[case_index]
    body = case.body.replace(b"\n", b"\r\n") if crlf else case.body
    assert asyncio.run(_assemble(case.kind, _cut(body, cuts))) == BASELINES[case.id]


@settings(max_examples=40, deadline=None)
@given(text=st.text(min_size=1, max_size=40), cuts=st.lists(st.integers(0, 1 << 12), max_size=30))
def test_any_chunking_of_unicode_text(text, cuts):
    import json

    chunks = [
        {"id": "c", "choices": [{"index": 0, "delta": {"content": ch}, "finish_reason": None}]} for ch in text
    ]
    chunks.append({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks).encode()
    done, _ = asyncio.run(_assemble("openai_chat", _cut(body, cuts)))
    assert done.response.text == text
