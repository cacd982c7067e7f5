"""Prompt caching through the real loop, the Anthropic adapter and HTTP, against the strict emulator."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from anthropic_emulator import StrictAnthropic, Turn, error_reply

from agent.events import DURABLE, RoundFinished, RunFailed
from agent.loop import AllowAll, LoopSettings, NextStepFailed, NextStepFinalOutput, run_agent
from agent.messages import Message, ToolSpec
from agent.providers.caching import count_markers, mark_anthropic
from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from agent.sink import ListSink
from agent.state import RunState
from agent.toolbox import ToolContext, ToolInfo, ToolOutcome

SYSTEM = "You are the files assistant. " + "Read before you write, and say what you changed. " * 12
ARTICLE = "Prompt caching keeps a prefix warm between rounds. " * 40


class Files:
    """read_file / write_file; each call returns a long-ish result like a real file would."""

    def __init__(self) -> None:
        self.executed: list[str] = []

    async def list_tools(self) -> list[ToolInfo]:
        schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        return [
            ToolInfo(spec=ToolSpec("read_file", "Read a file of the workspace.", schema)),
            ToolInfo(spec=ToolSpec("write_file", "Write a file of the workspace.", schema)),
        ]

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.executed.append(name)
        return ToolOutcome.success({"path": arguments["path"], "text": ARTICLE})


def tool_rounds_so_far(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def three_rounds(body: dict[str, Any]) -> Turn:
    """Round n reads file n; after three tool rounds, the answer."""
    n = tool_rounds_so_far(body)
    if n < 3:
        return Turn(
            text=f"Reading part {n}.", tool_uses=[(f"toolu_{n}", "read_file", {"path": f"part{n}.md"})]
        )
    return Turn(text="All three parts read.")


def anthropic(server: StrictAnthropic, http: httpx.AsyncClient, **overrides: Any):
    settings = ProviderSettings(
        name="claude",
        kind="anthropic",
        base_url=server.base_url,
        model="claude-sonnet-5",
        api_key="sk-ant-test",
        capability_overrides=overrides,
    )
    return build_provider(settings, http, sleep=_no_sleep)


async def _no_sleep(_: float) -> None:
    return None


async def run(provider, state: RunState | None = None, settings: LoopSettings | None = None):
    state = state or RunState.start("run", [Message.system(SYSTEM), Message.user("Read the three parts.")])
    sink = ListSink()
    step = await run_agent(state, provider, Files(), sink, settings or LoopSettings(), AllowAll())
    return step, state, sink


@pytest.fixture
async def emulator():
    servers: list[StrictAnthropic] = []

    async def start(responder=three_rounds, **kw: Any) -> StrictAnthropic:
        server = StrictAnthropic(responder, **kw)
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_loop_sends_breakpoints_the_strict_emulator_accepts_and_reads_the_cache(
    emulator, http, stream
):
    server = await emulator()
    step, state, sink = await run(anthropic(server, http, stream=stream))
    assert step == NextStepFinalOutput("All three parts read.")
    assert len(server.bodies) == 4
    for body in server.bodies:
        assert 1 <= count_markers(body) <= 4
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" in body["messages"][-1]["content"][-1]
    rounds = sink.of_type(RoundFinished)
    assert rounds[0].usage.cache_write_tokens > 0 and rounds[0].usage.cached_tokens == 0
    for earlier, later in zip(rounds, rounds[1:], strict=False):
        # Each round reads at least everything the round before it read and wrote.
        assert later.usage.cached_tokens >= earlier.usage.cached_tokens + earlier.usage.cache_write_tokens
    # The wire record in the trace is the body that was sent, markers included.
    assert rounds[1].request["wire"]["body"] == server.bodies[1]


async def test_a_resumed_run_sends_the_same_marked_requests(emulator, http):
    reference = await emulator()
    _, _, ref_sink = await run(anthropic(reference, http))
    durable = [e for e in ref_sink.events if isinstance(e, DURABLE)]
    cut = next(i for i, e in enumerate(durable) if isinstance(e, RoundFinished) and e.round_index == 1) + 1
    resumed_server = await emulator()
    start = [Message.system(SYSTEM), Message.user("Read the three parts.")]
    state = RunState.rebuild("run", start, durable[:cut])
    step, _, _ = await run(anthropic(resumed_server, http), state)
    assert step == NextStepFinalOutput("All three parts read.")
    assert resumed_server.bodies == reference.bodies[2:]


async def test_automatic_mode_sends_one_top_level_marker(emulator, http):
    server = await emulator()
    step, _, sink = await run(anthropic(server, http, prompt_cache="automatic"))
    assert isinstance(step, NextStepFinalOutput)
    assert all(b["cache_control"] == {"type": "ephemeral"} and count_markers(b) == 0 for b in server.bodies)
    assert sink.of_type(RoundFinished)[-1].usage.cached_tokens > 0


def test_markers_skip_thinking_and_empty_text_and_never_exceed_four():
    body = {
        "tools": [{"name": "a"}, {"name": "b"}],
        "system": "sys",
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "t"}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "…", "signature": "s"},
                    {"type": "text", "text": ""},
                ],
            },
        ],
    }
    mark_anthropic(body, "breakpoints")
    assert count_markers(body) == 3  # tools, system, the tool_result: thinking and empty text are skipped
    assert all("cache_control" not in b for b in body["messages"][-1]["content"])
    assert "cache_control" in body["messages"][-2]["content"][0]


async def test_a_refused_cache_marker_is_dropped_and_the_run_goes_on(emulator, http):
    server = await emulator(refuse_cache_control=True)
    provider = anthropic(server, http)
    step, _, sink = await run(provider)
    assert step == NextStepFinalOutput("All three parts read.")
    assert server.requests and count_markers(server.bodies[0]) > 0  # the first try had them, and was refused
    accepted = server.bodies[1:]
    assert len(accepted) == 4 and all(count_markers(b) == 0 for b in accepted)
    # The trace shows what was really sent: the body without markers.
    assert count_markers(sink.of_type(RoundFinished)[0].request["wire"]["body"]) == 0


async def test_other_bad_requests_fail_with_the_providers_message(emulator, http):
    message = "messages.0.content.0.text: Input should be a valid string"
    server = await emulator(lambda body: error_reply(400, "invalid_request_error", message))
    step, _, sink = await run(anthropic(server, http))
    assert isinstance(step, NextStepFailed)
    assert step.message == message and step.error_class == "BadRequest"
    assert len(server.requests) == 1  # never retried, caching not blamed
    assert sink.of_type(RunFailed)[0].message == message


async def test_the_emulator_enforces_the_documented_limit_of_four(emulator, http):
    server = await emulator()
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)
                ],
            }
        ],
    }
    response = await http.post(
        server.base_url + "/v1/messages",
        json=body,
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "type": "invalid_request_error",
        "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    }


async def test_openai_presets_send_one_prompt_cache_key_per_conversation():
    from agent.providers.types import ModelRequest

    request = ModelRequest((Message.user("hi"),), cache_key="clearloop-conversation-7")
    for kind in ("openai_chat", "openai_responses"):
        settings = ProviderSettings(
            name="o", kind=kind, base_url="https://api.openai.com/v1", model="gpt-5.2"
        )
        async with httpx.AsyncClient() as client:
            assert build_provider(settings, client).build_payload(request)["prompt_cache_key"] == (
                "clearloop-conversation-7"
            )
    local = ProviderSettings(name="l", kind="openai_chat", base_url="http://x/v1", model="m", preset="vllm")
    async with httpx.AsyncClient() as client:
        assert "prompt_cache_key" not in build_provider(local, client).build_payload(request)


def test_round_usage_keeps_cache_counts_through_json():
    from agent.providers.assemble import usage_from_anthropic
    from agent.state import usage_from_dict

    usage = usage_from_anthropic(
        {"input_tokens": 5, "cache_creation_input_tokens": 7, "cache_read_input_tokens": 9}
    )
    again = usage_from_dict(json.loads(json.dumps(usage.to_dict())))
    assert (again.cached_tokens, again.cache_write_tokens, again.prompt_tokens) == (9, 7, 21)


# -- compression with hysteresis keeps the cached prefix -------------------------------------------
def eight_rounds(body: dict[str, Any]) -> Turn:
    # Counted from the newest tool result's id: compression may drop older rounds from the history.
    ids = [
        int(b["tool_use_id"].split("_")[1])
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    n = max(ids) + 1 if ids else 0
    if n < 8:
        return Turn(tool_uses=[(f"toolu_{n}", "read_file", {"path": f"part{n}.md"})])
    return Turn(text="Done.")


async def test_compression_is_rare_and_keeps_the_compressed_prefix_cached(emulator, http):
    from agent.context import ContextLimits
    from agent.events import ContextCompressed

    server = await emulator(eight_rounds)
    limits = ContextLimits(
        context_window=3_000, model_max_output=500, requested_max_output=300, safety_margin=50
    )
    step, state, sink = await run(
        anthropic(server, http), settings=LoopSettings(limits=limits, max_iterations=12, max_same_tool=20)
    )
    assert step == NextStepFinalOutput("Done.")
    compressed_rounds = sorted({e.round_index for e in sink.of_type(ContextCompressed)})
    rounds = sink.of_type(RoundFinished)
    assert (
        1 <= len(compressed_rounds) <= 3 < len(rounds)
    )  # under pressure from round ~4 on, compressed rarely
    plans = [r.request["compression"] for r in rounds]
    for index, (plan, record) in enumerate(zip(plans, rounds, strict=True)):
        if plan is not None and index not in compressed_rounds:
            # The plan was kept: the compressed prefix is byte-identical, so the cache is read.
            assert plan == plans[index - 1]
            assert record.usage.cached_tokens >= rounds[index - 1].usage.cached_tokens
            previous = server.bodies[index - 1]["messages"][: plan["prefix"] - 1]
            assert _unmarked(server.bodies[index]["messages"][: len(previous)]) == _unmarked(previous)
    kept = [i for i, p in enumerate(plans) if p is not None and i not in compressed_rounds]
    assert len(kept) >= 2 and all(rounds[i].usage.cached_tokens > 0 for i in kept)


def _unmarked(messages: list[dict[str, Any]]) -> list[Any]:
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out.append((m["role"], [{k: v for k, v in b.items() if k != "cache_control"} for b in content]))
    return out


def test_bench_prices_cache_reads_and_writes_and_replays_an_exported_trace(tmp_path):
    from bench.providers.cache_cost import Prices, load, loop_cost, report, round_cost

    prices = Prices(input=3.0, cache_read=0.3, cache_write=3.75)
    usage = {"prompt_tokens": 14_000, "cached_tokens": 12_000, "cache_write_tokens": 2_000}
    assert round_cost(usage, prices) == pytest.approx((12_000 * 0.3 + 2_000 * 3.75) / 1e6)
    recorded = load(None)
    assert len(recorded["cached"]) == len(recorded["uncached"]) == 6
    assert loop_cost(recorded["cached"], prices) < loop_cost(recorded["uncached"], prices)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"rounds": [{"usage": usage}, {"usage": {"prompt_tokens": 100}}]}))
    text = report(load(trace), prices)
    assert "2-round loop input cost: 0.0114 with caching, 0.0423 without (73% less)" in text


async def test_the_loop_sends_the_runs_cache_key_on_every_round(http):
    from openai_chat_emulator import Answer, StrictOpenAIChat

    def respond(body):
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Answer(calls=[("call_1", "read_file", {"path": "a.md"})])
        return Answer(text="done")

    server = StrictOpenAIChat(respond)
    await server.start()
    try:
        settings = ProviderSettings(
            name="o", kind="openai_chat", base_url=server.base_url + "/v1", model="gpt-5.2", api_key="k"
        )
        step, _, _ = await run(
            build_provider(settings, http), settings=LoopSettings(cache_key="clearloop-conversation-42")
        )
    finally:
        await server.stop()
    assert step == NextStepFinalOutput("done")
    assert [b["prompt_cache_key"] for b in server.bodies] == ["clearloop-conversation-42"] * 2


async def test_markers_that_cannot_be_dropped_fail_with_the_message_and_the_rule(emulator, http):
    """The admin's extra body adds a marker the endpoint refuses; clearloop's own caching is off."""
    server = await emulator(refuse_cache_control=True)
    settings = ProviderSettings(
        name="claude",
        kind="anthropic",
        base_url=server.base_url,
        model="claude-sonnet-5",
        api_key="k",
        capability_overrides={"prompt_cache": "off"},
        extra_body={"cache_control": {"type": "ephemeral"}},
    )
    step, _, _ = await run(build_provider(settings, http, sleep=_no_sleep))
    assert isinstance(step, NextStepFailed) and step.error_class == "BadRequest"
    assert step.message.startswith("cache_control: Extra inputs are not permitted")
    assert "prompt_cache=off" in step.message and "rule broken" in step.message
    assert len(server.bodies) == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_markers_never_touch_replayed_thinking_and_the_blocks_come_back_unchanged(
    emulator, http, stream
):
    """Claude thinking on: each tool turn starts with a signed thinking block the emulator checks."""

    def thinking_rounds(body: dict[str, Any]) -> Turn:
        n = tool_rounds_so_far(body)
        if n < 3:
            return Turn(
                thinking=f"I should read part {n} next.",
                text=f"Reading part {n}.",
                tool_uses=[(f"toolu_{n}", "read_file", {"path": f"part{n}.md"})],
            )
        return Turn(text="All three parts read.")

    server = await emulator(thinking_rounds)
    step, state, sink = await run(anthropic(server, http, stream=stream))
    assert step == NextStepFinalOutput("All three parts read.")
    last = server.bodies[-1]
    assistants = [m for m in last["messages"] if m["role"] == "assistant"]
    assert [m["content"][0]["type"] for m in assistants] == ["thinking"] * 3
    assert all("cache_control" not in m["content"][0] for m in assistants)
    assert 1 <= count_markers(last) <= 4
    assert sink.of_type(RoundFinished)[-1].usage.cached_tokens > 0
    # The stored rounds keep the blocks as received: marking the request never wrote into them.
    assert all("cache_control" not in b.data for r in state.rounds for b in r.choice.replay)


async def test_a_run_resumed_after_a_compression_sends_the_same_compressed_requests(emulator, http):
    from agent.context import ContextLimits

    limits = ContextLimits(
        context_window=3_000, model_max_output=500, requested_max_output=300, safety_margin=50
    )
    loop = LoopSettings(limits=limits, max_iterations=12, max_same_tool=20)
    reference = await emulator(eight_rounds)
    _, _, ref_sink = await run(anthropic(reference, http), settings=loop)
    durable = [e for e in ref_sink.events if isinstance(e, DURABLE)]
    planned = [e for e in ref_sink.of_type(RoundFinished) if e.request["compression"]]
    # Crash right after the first compressed round was stored: the plan must come back from the rows.
    cut = durable.index(planned[0]) + 1
    resumed = await emulator(eight_rounds)
    start = [Message.system(SYSTEM), Message.user("Read the three parts.")]
    step, _, _ = await run(anthropic(resumed, http), RunState.rebuild("run", start, durable[:cut]), loop)
    assert step == NextStepFinalOutput("Done.")
    assert resumed.bodies == reference.bodies[planned[0].round_index + 1 :]
