"""The preset fixes of issue 10 §3, each reproduced against a strict emulator through the real loop."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic_emulator import StrictAnthropic, Turn, error_reply
from openai_chat_emulator import Answer, StrictOpenAIChat
from test_prompt_caching import SYSTEM, Files, anthropic, run

from agent.events import ContextCompressed, RoundFinished
from agent.loop import AllowAll, LoopSettings, NextStepFailed, NextStepFinalOutput, run_agent
from agent.loop.history import CONTINUE_PROMPT
from agent.messages import Message
from agent.providers.error_map import map_error
from agent.providers.errors import ContextTooLong
from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from agent.sink import ListSink
from agent.state import RunState

BIG = "x" * 6_000  # a tool result the pressure cap (2,000 characters) cuts


@pytest.fixture
async def start():
    servers: list[Any] = []

    async def go(server):
        await server.start()
        servers.append(server)
        return server

    yield go
    for server in servers:
        await server.stop()


def assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def results_of(body: dict[str, Any]) -> list[str]:
    return [
        str(b.get("content"))
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


class BigFiles(Files):
    async def execute(self, name, arguments, ctx):
        from agent.toolbox import ToolOutcome

        self.executed.append(name)
        return ToolOutcome.success(BIG)


# -- parallel_tool_calls and the o-series ---------------------------------------------------------
@pytest.mark.parametrize("model", ["o4-mini", "o3", "o1"])
async def test_o_series_gets_no_parallel_tool_calls_and_the_tool_loop_completes(start, http, model):
    def respond(body):
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Answer(calls=[("call_1", "read_file", {"path": "a.md"})])
        return Answer(text="done")

    server = await start(StrictOpenAIChat(respond))
    settings = ProviderSettings(
        name="o", kind="openai_chat", base_url=server.base_url + "/v1", model=model, api_key="sk-test"
    )
    provider = build_provider(settings, http)
    state = RunState.start("run", [Message.system(SYSTEM), Message.user("read a")])
    loop = LoopSettings(parallel_tool_calls=True)  # what the host asks for; the profile filters it
    step = await run_agent(state, provider, Files(), ListSink(), loop, AllowAll())
    assert step == NextStepFinalOutput("done")
    assert all("parallel_tool_calls" not in b for b in server.bodies)


async def test_other_openai_models_still_get_parallel_tool_calls(start, http):
    server = await start(StrictOpenAIChat(lambda body: Answer(text="hi")))
    settings = ProviderSettings(
        name="o", kind="openai_chat", base_url=server.base_url + "/v1", model="gpt-4.1"
    )
    state = RunState.start("run", [Message.user("hi")])
    await run_agent(state, build_provider(settings, http), Files(), ListSink(), LoopSettings(), AllowAll())
    assert server.bodies[0]["parallel_tool_calls"] is True


# -- premature EOF ----------------------------------------------------------------------------------
async def test_a_stream_cut_before_any_output_is_retried(start, http):
    cut_once = {"done": False}

    def respond(body):
        if not cut_once["done"]:
            cut_once["done"] = True
            return Turn(text="never seen", cut_after=1)  # message_start only, then the connection ends
        return Turn(text="answer")

    server = await start(StrictAnthropic(respond))
    step, _, _ = await run(anthropic(server, http))
    assert step == NextStepFinalOutput("answer")
    assert len(server.bodies) == 2


async def test_a_stream_cut_after_output_is_not_retried(start, http):
    server = await start(StrictAnthropic(lambda body: Turn(text="half an ans", cut_after=3)))
    step, _, _ = await run(anthropic(server, http))
    assert isinstance(step, NextStepFailed)
    assert step.error_class == "StreamEndedEarly" and "message_stop" in step.message
    assert len(server.bodies) == 1


# -- Anthropic's context-limit wordings ----------------------------------------------------------------
@pytest.mark.parametrize(
    "message",
    [
        "input length and `max_tokens` exceed context limit: 195000 + 16384 > 200000, decrease input length "
        "or `max_tokens` and try again",
        "input and output tokens exceed your context limit",
        "prompt is too long: 208310 tokens > 200000 maximum",
    ],
)
def test_anthropic_context_wordings_are_context_errors(message):
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    assert isinstance(map_error(400, body), ContextTooLong)


async def test_context_limit_error_shrinks_and_retries_the_round(start, http):
    wording = (
        "input length and `max_tokens` exceed context limit: 199000 + 4096 > 200000, decrease input "
        "length or `max_tokens` and try again"
    )

    def respond(body):
        if any(len(r) > 4_000 for r in results_of(body)) and assistant_turns(body) >= 2:
            return error_reply(400, "invalid_request_error", wording)
        if assistant_turns(body) < 2:
            n = assistant_turns(body)
            return Turn(tool_uses=[(f"toolu_{n}", "read_file", {"path": f"{n}.md"})])
        return Turn(text="fits now")

    server = await start(StrictAnthropic(respond))
    provider = anthropic(server, http)
    state = RunState.start("run", [Message.system(SYSTEM), Message.user("read")])
    sink = ListSink()
    step = await run_agent(state, provider, BigFiles(), sink, LoopSettings(), AllowAll())
    assert step == NextStepFinalOutput("fits now")
    assert [e.step for e in sink.of_type(ContextCompressed)][:1] == ["cap_tool_results"]
    assert all(len(r) <= 4_000 for r in results_of(server.bodies[-1]))


# -- model_context_window_exceeded ----------------------------------------------------------------------
async def test_context_window_exceeded_compresses_before_the_follow_up(start, http):
    def respond(body):
        last = body["messages"][-1]["content"]
        if assistant_turns(body) == 0:
            return Turn(tool_uses=[("toolu_0", "read_file", {"path": "big.md"})])
        if not (isinstance(last, list) and last[-1].get("text") == CONTINUE_PROMPT):
            return Turn(text="The first half", stop_reason="model_context_window_exceeded")
        if any(len(r) > 4_000 for r in results_of(body)):
            wording = "input length and `max_tokens` exceed context limit: 199000 + 4096 > 200000"
            return error_reply(400, "invalid_request_error", wording)
        return Turn(text=" and the second half.")

    server = await start(StrictAnthropic(respond))
    state = RunState.start("run", [Message.system(SYSTEM), Message.user("read")])
    sink = ListSink()
    step = await run_agent(state, anthropic(server, http), BigFiles(), sink, LoopSettings(), AllowAll())
    assert step == NextStepFinalOutput("The first half and the second half.", partial=False)
    # Three requests: the follow-up was compressed before it was sent, never refused for its size.
    assert len(server.bodies) == 3
    assert {e.round_index for e in sink.of_type(ContextCompressed)} == {2}
    assert sink.of_type(RoundFinished)[1].finish_reason_raw == "model_context_window_exceeded"
    assert server.bodies[2]["messages"][-1]["content"][-1]["text"] == CONTINUE_PROMPT


# -- retry_after beyond the round's wait limit ----------------------------------------------------------
@pytest.mark.parametrize("wait", ["45", "120"])
async def test_a_long_retry_after_fails_fast_with_the_wait_shown(start, http, wait):
    limited = error_reply(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
        headers={"retry-after": wait},
    )
    server = await start(StrictAnthropic(lambda body: limited))
    step, _, _ = await run(anthropic(server, http), settings=LoopSettings(max_round_retry_wait=30))
    assert isinstance(step, NextStepFailed) and step.error_class == "RateLimited"
    assert f"wait {wait} s" in step.message and "30 s" in step.message
    assert len(server.bodies) == 1  # not retried: neither by the adapter nor by the loop


async def test_a_short_retry_after_is_waited_for(start, http):
    calls = {"n": 0}

    def respond(body):
        calls["n"] += 1
        if calls["n"] == 1:
            return error_reply(429, "rate_limit_error", "slow down", headers={"retry-after": "2"})
        return Turn(text="ok")

    server = await start(StrictAnthropic(respond))
    step, _, _ = await run(anthropic(server, http))
    assert step == NextStepFinalOutput("ok")
    assert len(server.bodies) == 2
