"""Provider knobs (reasoning effort, thinking, budget, extra body) on the wire, against strict
emulators over real HTTP: each preset sends its provider's documented field, and nothing it sends
is refused."""

from __future__ import annotations

import pytest
from knob_emulators import KnobEmulator, sent
from provider_helpers import USER_REQUEST, collect, make_provider, response_of

from agent.providers.errors import BadRequest
from agent.providers.knobs import KnobError, Knobs
from agent.providers.types import ModelRequest


@pytest.fixture
async def emulator(request):
    server = KnobEmulator(request.param)
    await server.start()
    yield server
    await server.stop()


# (preset, kind, knobs, the fields the provider documents for them)
WIRE_TABLE = [
    ("openai", "openai_chat", Knobs(reasoning_effort="high"), {"reasoning_effort": "high"}),
    ("openai_responses", "openai_responses", Knobs(reasoning_effort="low"), {"reasoning": {"effort": "low"}}),
    (
        "deepseek",
        "openai_chat",
        Knobs(reasoning_effort="max", thinking=False),
        {"reasoning_effort": "max", "thinking": {"type": "disabled"}},
    ),
    ("qwen", "openai_chat", Knobs(thinking=True, thinking_budget=4000), {"enable_thinking": True, "thinking_budget": 4000}),
    ("qwen", "openai_chat", Knobs(thinking=False), {"enable_thinking": False}),
    ("vllm", "openai_chat", Knobs(thinking=False), {"chat_template_kwargs": {"enable_thinking": False}}),
    ("gemini", "openai_chat", Knobs(reasoning_effort="low"), {"reasoning_effort": "low"}),
    ("ollama", "openai_chat", Knobs(reasoning_effort="medium"), {"reasoning_effort": "medium"}),
    (
        "openrouter",
        "openai_chat",
        Knobs(thinking=True, thinking_budget=2000),
        {"reasoning": {"max_tokens": 2000, "enabled": True}},
    ),
    ("anthropic", "anthropic", Knobs(thinking=True), {"thinking": {"type": "adaptive"}}),
    (
        "anthropic",
        "anthropic",
        Knobs(reasoning_effort="medium", thinking_budget=4000),
        {"output_config": {"effort": "medium"}, "thinking": {"type": "enabled", "budget_tokens": 4000}},
    ),
    ("anthropic", "anthropic", Knobs(thinking=False), {"thinking": {"type": "disabled"}}),
]


@pytest.mark.parametrize(("preset", "kind", "knobs", "fields"), WIRE_TABLE)
async def test_each_preset_sends_its_providers_documented_field(server, http, preset, kind, knobs, fields):
    from knob_emulators import ANTHROPIC_OK, CHAT_OK
    from provider_fixture_server import Reply

    server.queue(Reply.sse(ANTHROPIC_OK if kind == "anthropic" else CHAT_OK))
    provider = make_provider(http, server.base_url, kind, preset, knobs=knobs)
    request = ModelRequest(USER_REQUEST.messages, max_output_tokens=8000)
    if kind == "openai_responses":
        assert provider.describe_request(request)["body"]["reasoning"] == fields["reasoning"]
        return  # the Responses wire has its own stream format; the body is what is checked here
    await collect(provider, request)
    body = sent(server)
    for key, value in fields.items():
        assert body[key] == value, key
    assert provider.describe_request(request)["body"] == body  # the trace shows what was sent


@pytest.mark.parametrize("emulator", ["anthropic"], indirect=True)
async def test_anthropic_budget_stays_below_max_tokens_when_the_round_is_squeezed(emulator, http):
    provider = make_provider(http, emulator.base_url, "anthropic", "anthropic", knobs=Knobs(thinking_budget=8000))
    # Plenty of room: the budget is sent as set.
    response_of(await collect(provider, ModelRequest(USER_REQUEST.messages, max_output_tokens=16000)))
    assert sent(emulator)["thinking"] == {"type": "enabled", "budget_tokens": 8000}
    # The context window squeezed this round's output to 3000: the budget follows, still valid.
    response_of(await collect(provider, ModelRequest(USER_REQUEST.messages, max_output_tokens=3000)))
    assert sent(emulator)["thinking"] == {"type": "enabled", "budget_tokens": 2999}
    # Below the API's minimum there is no valid budget: thinking is left at the model's default.
    response_of(await collect(provider, ModelRequest(USER_REQUEST.messages, max_output_tokens=900)))
    assert "thinking" not in sent(emulator)
    assert len(emulator.requests) == 3  # every one accepted, none retried


@pytest.mark.parametrize("emulator", ["anthropic"], indirect=True)
async def test_the_emulator_refuses_what_anthropic_refuses(emulator, http):
    # The emulator is strict: an extra body that forces an invalid budget gets Anthropic's 400,
    # mapped to BadRequest with the provider's own message (never retried).
    provider = make_provider(
        http,
        emulator.base_url,
        "anthropic",
        "anthropic",
        extra_body={"thinking": {"type": "enabled", "budget_tokens": 5000}},
    )
    with pytest.raises(BadRequest, match="must be greater than `thinking.budget_tokens`"):
        await collect(provider, ModelRequest(USER_REQUEST.messages, max_output_tokens=2000))
    assert len(emulator.requests) == 1


@pytest.mark.parametrize("emulator", ["deepseek"], indirect=True)
async def test_deepseek_thinking_off_and_effort_are_accepted(emulator, http):
    provider = make_provider(
        http, emulator.base_url, "openai_chat", "deepseek", knobs=Knobs(reasoning_effort="high", thinking=False)
    )
    assert response_of(await collect(provider)).text == "ok"
    assert sent(emulator)["thinking"] == {"type": "disabled"}


@pytest.mark.parametrize("emulator", ["dashscope"], indirect=True)
async def test_qwen_thinking_is_sent_only_with_streaming(emulator, http):
    provider = make_provider(http, emulator.base_url, "openai_chat", "qwen", knobs=Knobs(thinking=True))
    assert response_of(await collect(provider)).text == "ok"
    assert sent(emulator)["enable_thinking"] is True and sent(emulator)["stream"] is True


async def test_the_extra_body_is_merged_into_every_request_and_retries(server, http):
    from provider_cases import CASES_BY_ID
    from provider_fixture_server import Reply

    server.queue(Reply.json(500, {"error": {"message": "boom", "type": "server_error"}}))
    server.queue(Reply.sse(CASES_BY_ID["openai_chat_stream_finish_length"].body))
    extra = {"store": False, "prompt_cache_key": "conv-7", "reasoning_effort": "low"}
    provider = make_provider(http, server.base_url, "openai_chat", "openai", extra_body=extra)
    await collect(provider)
    assert len(server.requests) == 2
    for request in server.requests:
        body = request.json()
        assert {k: body[k] for k in extra} == extra
        assert body["model"] == "m" and body["stream"] is True


def test_the_extra_body_can_never_override_what_the_adapter_sends(http):
    for key in ("model", "messages", "input", "tools", "stream"):
        with pytest.raises(KnobError, match=f"may not set {key}"):
            make_provider(http, "http://127.0.0.1:9", "openai_chat", "openai", extra_body={key: "x"})
    with pytest.raises(KnobError, match="must be a JSON object"):
        make_provider(http, "http://127.0.0.1:9", "openai_chat", "openai", extra_body=["x"])


@pytest.mark.parametrize(
    ("preset", "kind", "knobs", "error"),
    [
        ("openai", "openai_chat", Knobs(thinking_budget=2000), "does not support thinking_budget"),
        ("llamacpp", "openai_chat", Knobs(reasoning_effort="low"), "supports: none"),
        ("deepseek", "openai_chat", Knobs(reasoning_effort="extreme"), "is not one of"),
        ("qwen", "openai_chat", Knobs(reasoning_effort="high"), "does not support reasoning_effort"),
        ("anthropic", "anthropic", Knobs(thinking_budget=500), "at least 1024"),
        ("anthropic", "anthropic", Knobs(thinking=False, thinking_budget=2000), "needs thinking on"),
    ],
)
def test_a_knob_the_preset_cannot_send_is_refused_before_any_request(http, preset, kind, knobs, error):
    with pytest.raises(KnobError, match=error):
        make_provider(http, "http://127.0.0.1:9", kind, preset, knobs=knobs)


def test_output_limit_defaults_are_large_enough_for_thinking(http):
    for preset, kind, model in (
        ("anthropic", "anthropic", "claude-opus-5"),
        ("openai", "openai_chat", "o4-mini"),
        ("openai_responses", "openai_responses", "gpt-5.1"),
        ("deepseek", "openai_chat", "deepseek-v4-pro"),
    ):
        provider = make_provider(http, "http://127.0.0.1:9", kind, preset, model=model)
        assert provider.max_output_tokens >= 32_000, preset
    # gpt-4o takes at most 16,384 completion tokens: the non-reasoning default stays within it.
    assert make_provider(http, "http://127.0.0.1:9", "openai_chat", "openai", model="gpt-4o").max_output_tokens == 16_384


async def test_knobs_and_the_extra_body_ride_every_round_of_a_tool_loop_and_its_resumed_run(http):
    """Through the real loop over real HTTP, against the strict o-series emulator (which answers 400
    to what OpenAI refuses, parallel_tool_calls included): every round of a three-request tool loop
    carries the effort and the admin's extra body, and a run resumed after its first round (rebuilt
    from its durable events, as the worker does) sends the same requests."""
    from openai_chat_emulator import Answer, StrictOpenAIChat
    from test_prompt_caching import Files

    from agent.context.budget import ContextLimits
    from agent.events import DURABLE, RoundFinished
    from agent.loop import AllowAll, LoopSettings, NextStepFinalOutput, run_agent
    from agent.messages import Message
    from agent.providers.registry import build_provider
    from agent.providers.settings import ProviderSettings
    from agent.sink import ListSink
    from agent.state import RunState

    def respond(body):
        n = sum(1 for m in body["messages"] if m["role"] == "tool")
        if n < 2:
            return Answer(calls=[(f"call_{n}", "read_file", {"path": f"{n}.md"})])
        return Answer(text="done")

    extra = {"metadata": {"app": "clearloop"}, "service_tier": "flex"}
    start = [Message.system("You read files."), Message.user("Read two files.")]

    async def drive(state: RunState) -> tuple[StrictOpenAIChat, ListSink]:
        server = StrictOpenAIChat(respond)
        await server.start()
        try:
            settings = ProviderSettings(
                name="o", kind="openai_chat", base_url=server.base_url + "/v1", model="o4-mini", api_key="sk-test",
                knobs=Knobs(reasoning_effort="high"), extra_body=extra,
            )
            provider = build_provider(settings, http)
            # As the worker does (load_run_context): the output limit is the preset's default.
            output = provider.max_output_tokens
            limits = ContextLimits(context_window=200_000, model_max_output=output, requested_max_output=output)
            sink = ListSink()
            loop = LoopSettings(parallel_tool_calls=True, limits=limits)
            step = await run_agent(state, provider, Files(), sink, loop, AllowAll())
            assert step == NextStepFinalOutput("done")
            return server, sink
        finally:
            await server.stop()

    reference, sink = await drive(RunState.start("run", list(start)))
    assert len(reference.bodies) == 3
    for body in reference.bodies:
        assert body["reasoning_effort"] == "high"
        assert {k: body[k] for k in extra} == extra
        assert body["max_completion_tokens"] >= 32_000  # a reasoning model's default output limit
        assert "parallel_tool_calls" not in body and body["model"] == "o4-mini"
    durable = [e for e in sink.events if isinstance(e, DURABLE)]
    cut = next(i for i, e in enumerate(durable) if isinstance(e, RoundFinished) and e.round_index == 0) + 1
    resumed, _ = await drive(RunState.rebuild("run", list(start), durable[:cut]))
    assert resumed.bodies == reference.bodies[1:]
