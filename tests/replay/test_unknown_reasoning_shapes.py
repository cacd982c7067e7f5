"""Bad input: a reasoning shape nobody knows yet. A Claude answer with a content block type of its
own (and a delta type of its own), a Responses answer with an output item type and a stream event of
its own: the run goes on, streamed, non-streamed and resumed, and the unknown part is not sent back
(the provider does not require what it did not document)."""

from __future__ import annotations

import json

import pytest
from replay_anthropic_emulator import AnthropicEmulator
from replay_harness import provider_for, run_seed
from replay_responses_emulator import ResponsesEmulator
from replay_seed import FINAL_TEXT, expected_report, reasoning_for

from agent.loop.steps import NextStepFinalOutput

MODES = {"streamed": ({}, None), "non-streamed": ({"capability_overrides": {"stream": False}}, None), "resumed": ({}, 1)}


@pytest.mark.parametrize("mode", list(MODES))
async def test_claude_with_an_unknown_block_type(mode):
    overrides, die_after = MODES[mode]
    emulator = AnthropicEmulator(unknown_shape=True)
    async with provider_for(emulator.app(), "anthropic", "anthropic", "claude-fable-5-1", **overrides) as provider:
        step, state, _, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert state.rounds[-1].choice.reasoning == reasoning_for(3)
    assert "thinking_digest" not in json.dumps(emulator.requests, ensure_ascii=False)
    assert "摘要" not in state.rounds[0].choice.text


@pytest.mark.parametrize("mode", list(MODES))
async def test_responses_with_an_unknown_output_item(mode):
    overrides, die_after = MODES[mode]
    emulator = ResponsesEmulator(unknown_shape=True)
    async with provider_for(emulator.app(), "openai_responses", "openai_responses", "gpt-5.2", **overrides) as provider:
        step, state, _, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert [b.type for b in state.rounds[0].choice.replay] == ["reasoning"]
    assert "reasoning_trace" not in json.dumps(emulator.requests)
