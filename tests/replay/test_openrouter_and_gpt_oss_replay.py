"""OpenRouter reasoning_details and gpt-oss raw CoT (vLLM ``reasoning``) in a tool loop, through
the real loop over real HTTP, streamed, not streamed and resumed after a crash at every durable
event: what each documents for tool loops goes back unchanged."""

from __future__ import annotations

import pytest
from replay_chat_emulators import OPENROUTER_UPSTREAM_MISSING, GptOssVllmEmulator, OpenRouterEmulator
from replay_harness import provider_for, run_seed
from replay_seed import FINAL_TEXT, expected_report, reasoning_for

from agent.loop.steps import NextStepFailed, NextStepFinalOutput

CLAUDE = "anthropic/claude-fable-5.1"
GPT_OSS = "openai/gpt-oss-120b"


def assert_details_replayed(emulator: OpenRouterEmulator) -> None:
    """Every later request carries each tool turn's reasoning_details exactly as assembled."""
    for number, body in enumerate(emulator.requests[1:], start=1):
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert len(assistants) == number
        first = assistants[0]["reasoning_details"]
        assert [d["type"] for d in first] == ["reasoning.text", "reasoning.encrypted"]
        assert first[0]["text"] == reasoning_for(0) and first[0]["signature"] and first[1]["data"]
        assert first[0]["format"] == "anthropic-claude-v1"
        if number == 2:
            assert [d["type"] for d in assistants[1]["reasoning_details"]] == ["reasoning.text"]


def assert_cot_replayed(emulator: GptOssVllmEmulator) -> None:
    for number, body in enumerate(emulator.requests[1:], start=1):
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert [m["reasoning"] for m in assistants] == [reasoning_for(s) for s in (0, 2)[:number]]
        assert all("reasoning_content" not in m for m in assistants)


@pytest.mark.parametrize("stream", [True, False])
async def test_openrouter_claude_thinking_three_rounds(stream):
    emulator = OpenRouterEmulator()
    overrides = {} if stream else {"capability_overrides": {"stream": False}}
    async with provider_for(emulator.app(), "openai_chat", "openrouter", CLAUDE, **overrides) as provider:
        step, state, _, files = await run_seed(provider)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert_details_replayed(emulator)
    assert state.rounds[0].choice.reasoning == reasoning_for(0)


@pytest.mark.parametrize("die_after", range(1, 9))
async def test_openrouter_resumed_after_a_crash_sends_the_same_details(die_after):
    emulator = OpenRouterEmulator()
    async with provider_for(emulator.app(), "openai_chat", "openrouter", CLAUDE) as provider:
        step, _, _, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT), die_after
    assert sorted(files.executed) == ["read_file", "search_files", "write_file"]
    assert_details_replayed(emulator)


async def test_openrouter_without_details_fails_with_the_upstreams_words_and_the_rule():
    """OpenRouter wraps the upstream's 400 as "Provider returned error"; the run says what
    Anthropic said and the rule, not the bare wrapper."""
    emulator = OpenRouterEmulator()
    off = {"capability_overrides": {"replay_blocks": False}}
    async with provider_for(emulator.app(), "openai_chat", "openrouter", CLAUDE, **off) as provider:
        step, state, _, _ = await run_seed(provider)
    assert isinstance(step, NextStepFailed)
    message = state.outcome.message
    assert message.startswith("Provider returned error: Anthropic: ")
    assert OPENROUTER_UPSTREAM_MISSING.format(i=1) in message
    assert "rule broken: Anthropic extended thinking" in message
    assert len(emulator.requests) == 2


@pytest.mark.parametrize("stream", [True, False])
async def test_gpt_oss_on_vllm_gets_its_raw_cot_back_between_tool_calls(stream):
    emulator = GptOssVllmEmulator()
    overrides = {} if stream else {"capability_overrides": {"stream": False}}
    async with provider_for(emulator.app(), "openai_chat", "vllm", GPT_OSS, **overrides) as provider:
        step, state, _, files = await run_seed(provider)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert_cot_replayed(emulator)
    assert [r.choice.reasoning for r in state.rounds] == [reasoning_for(s) for s in (0, 2, 3)]


@pytest.mark.parametrize("die_after", range(1, 9))
async def test_gpt_oss_resumed_after_a_crash_sends_the_same_cot(die_after):
    emulator = GptOssVllmEmulator()
    async with provider_for(emulator.app(), "openai_chat", "vllm", GPT_OSS) as provider:
        step, _, _, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT), die_after
    assert sorted(files.executed) == ["read_file", "search_files", "write_file"]
    assert_cot_replayed(emulator)
