"""DeepSeek V4 thinking mode in a tool loop: reasoning_content goes back, byte for byte, on every
assistant message of a tool-call turn; the strict emulator answers 400 otherwise."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import httpx
import pytest
from replay_chat_emulators import DEEPSEEK_MISSING, DeepSeekEmulator
from replay_emulator_http import serve
from replay_harness import provider_for, run_seed
from replay_seed import FINAL_TEXT, expected_report, reasoning_for

from agent.loop.steps import NextStepFailed, NextStepFinalOutput
from agent.messages import Message, ToolCall
from agent.providers import profiles
from agent.providers.openai_chat_request import build_payload
from agent.providers.openai_chat_stream import ChatAccumulator
from agent.providers.types import ModelRequest, ResponseDone

FIXTURES = Path("/work/shared/fixtures/providers")


def assert_replayed(emulator: DeepSeekEmulator) -> None:
    """Round 2 and 3 carry each earlier round's reasoning exactly as the emulator streamed it."""
    bodies = emulator.requests
    for number, body in enumerate(bodies[1:], start=1):
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert len(assistants) == number
        expected = [reasoning_for(seen) for seen in (0, 2)[:number]]
        assert [m["reasoning_content"] for m in assistants] == expected


@pytest.mark.parametrize("stream", [True, False])
async def test_seed_three_rounds_against_deepseek_v4(stream):
    emulator = DeepSeekEmulator()
    overrides = {} if stream else {"capability_overrides": {"stream": False}}
    async with provider_for(emulator.app(), "openai_chat", "deepseek", "deepseek-v4-pro", **overrides) as provider:
        step, state, _, files = await run_seed(provider)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert len(emulator.requests) == 3 and all(b["stream"] is stream for b in emulator.requests)
    assert_replayed(emulator)
    # The reasoning is stored with its round (and shown in the trace from there).
    assert [r.choice.reasoning for r in state.rounds[:2]] == [reasoning_for(0), reasoning_for(2)]


@pytest.mark.parametrize("die_after", range(1, 9))
async def test_resumed_after_a_crash_replays_the_stored_reasoning(die_after):
    emulator = DeepSeekEmulator()
    async with provider_for(emulator.app(), "openai_chat", "deepseek", "deepseek-v4-flash") as provider:
        step, state, sink, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT), die_after
    assert files.written == {"report.md": expected_report()}
    assert sorted(files.executed) == ["read_file", "search_files", "write_file"]  # nothing twice
    assert_replayed(emulator)


async def test_without_replay_the_emulator_rejects_round_two_as_deepseek_documents():
    """The profile decides: a preset that does not replay gets DeepSeek's documented 400, and the
    run fails with that message and the rule it broke, not a bare status."""
    emulator = DeepSeekEmulator()
    no_replay = {"capability_overrides": {"reasoning_replay": "none"}}
    async with provider_for(emulator.app(), "openai_chat", "deepseek", "deepseek-v4-pro", **no_replay) as provider:
        step, state, _, _ = await run_seed(provider)
    assert isinstance(step, NextStepFailed)
    assert DEEPSEEK_MISSING in state.outcome.message
    assert "reasoning_content" in state.outcome.message and "docs/providers.md" in state.outcome.message
    assert len(emulator.requests) == 2


def test_only_tool_call_turns_send_reasoning_back():
    caps = profiles.resolve("deepseek", "deepseek-v4-pro")
    call = ToolCall("c1", "read_file", "{}")
    earlier = Message(role="assistant", content="hi", reasoning="chat turn, no tools")
    tool_turn = Message(role="assistant", content=None, tool_calls=(call,), reasoning="tool turn")
    later_text = Message(role="assistant", content="done", reasoning="after the tool")
    request = ModelRequest(
        (Message.user("a"), earlier, Message.user("b"), tool_turn, Message.tool("c1", "{}"), later_text, Message.user("c"))
    )
    messages = build_payload(request, caps, model="deepseek-v4-pro", max_output=None)["messages"]
    assert "reasoning_content" not in messages[1]  # a turn without tool calls: DeepSeek ignores it
    assert messages[3]["reasoning_content"] == "tool turn"
    assert messages[5]["reasoning_content"] == "after the tool"  # same turn as the tool call
    plain = build_payload(request, profiles.resolve("openai", "gpt-4.1"), model="gpt-4.1", max_output=None)
    assert all("reasoning_content" not in m for m in plain["messages"])  # capabilities, not names


async def test_recorded_deepseek_round_one_then_the_round_two_request():
    """Replay the recorded fixture's round 1 over HTTP, then check the request round 2 sends."""
    lines = (FIXTURES / "deepseek_chat_stream_reasoning_tool_call.jsonl").read_text().splitlines()
    recorded = "".join(f"data: {line}\n\n" for line in lines if line.strip()) + "data: [DONE]\n\n"
    reasoning = "".join(
        (json.loads(line)["choices"][0]["delta"].get("reasoning_content") or "")
        for line in lines if line.strip() and json.loads(line)["choices"]
    )
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    async def round_one(request):
        return Response(recorded, media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", round_one, methods=["POST"])])
    async with serve(app) as base, httpx.AsyncClient() as http:
        from agent.providers.registry import build_provider
        from agent.providers.settings import ProviderSettings

        settings = ProviderSettings(name="ds", kind="openai_chat", base_url=base + "/v1", model="deepseek-v4-pro", preset="deepseek")
        provider = build_provider(settings, http)
        first = ModelRequest((Message.user("What is the weather in San Francisco?"),))
        events = [e async for e in provider.stream(first)]
    response = next(e for e in events if isinstance(e, ResponseDone)).response
    assert response.primary.reasoning == reasoning and response.finish_reason == "tool_calls"
    call = response.tool_calls[0]
    from agent.events import RoundFinished
    from agent.loop.history import transcript
    from agent.state import RunState

    state = RunState.start("fixture", list(first.messages))
    state.apply(RoundFinished(0, "normal", "ds", "deepseek-v4-pro", {}, response, "tool_calls", "tool_calls", response.usage, None, 1.0))
    history = transcript(state) + [Message.tool(call.id, '{"temperature": 18}')]
    second = provider.build_payload(ModelRequest(tuple(history)))
    assistant = second["messages"][1]
    assert assistant["reasoning_content"] == reasoning  # byte for byte, as streamed
    assert assistant["tool_calls"] == [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_raw}}
    ]
    assert second["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 18}'}


def test_chat_accumulator_keeps_reasoning_per_choice_unchanged():
    acc = ChatAccumulator()
    acc.feed("", json.dumps({"choices": [{"index": 0, "delta": {"reasoning_content": "α"}}]}))
    acc.feed("", json.dumps({"choices": [{"index": 0, "delta": {"reasoning_content": "β"}, "finish_reason": "stop"}]}))
    done = [e for e in acc.finish() if isinstance(e, ResponseDone)][0]
    assert done.response.primary.reasoning == "αβ"
    assert dataclasses.asdict(done.response.primary)["replay"] == ()
