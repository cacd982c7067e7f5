"""Claude thinking in a tool loop: thinking and redacted_thinking blocks captured whole (signature
from signature_delta) and replayed first, byte for byte, in the assistant turn with the tool_use."""

from __future__ import annotations

import pytest
from replay_anthropic_emulator import MUST_START, AnthropicEmulator
from replay_harness import provider_for, run_seed
from replay_seed import FINAL_TEXT, expected_report, reasoning_for

from agent.loop.steps import NextStepFailed, NextStepFinalOutput
from agent.messages import Message, ToolCall
from agent.providers import profiles
from agent.providers.anthropic_request import build_payload
from agent.providers.anthropic_stream import events_from_message
from agent.providers.types import ModelRequest, ResponseDone
from agent.replay import ReplayBlock

MODEL = "claude-fable-5-1"


def assert_blocks_replayed(emulator: AnthropicEmulator) -> None:
    for number, body in enumerate(emulator.requests[1:], start=1):
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert len(assistants) == number
        first = assistants[0]["content"]
        assert [b["type"] for b in first[:2]] == ["thinking", "redacted_thinking"]
        assert first[0]["thinking"] == reasoning_for(0) and first[0]["signature"]
        assert set(first[0]) == {"type", "thinking", "signature"}  # nothing added, nothing lost
        assert [b["type"] for b in first[2:]] == ["tool_use", "tool_use"]
        if number == 2:
            assert [b["type"] for b in assistants[1]["content"]] == ["thinking", "tool_use"]


@pytest.mark.parametrize("stream", [True, False])
async def test_seed_three_rounds_against_claude_with_thinking(stream):
    emulator = AnthropicEmulator()
    overrides = {} if stream else {"capability_overrides": {"stream": False}}
    async with provider_for(emulator.app(), "anthropic", "anthropic", MODEL, **overrides) as provider:
        step, state, _, files = await run_seed(provider)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert len(emulator.requests) == 3
    assert_blocks_replayed(emulator)
    first = state.rounds[0].choice
    assert first.reasoning == reasoning_for(0)
    assert [b.type for b in first.replay] == ["thinking", "redacted_thinking"]


@pytest.mark.parametrize("die_after", range(1, 9))
async def test_resumed_after_a_crash_sends_the_same_signed_bytes(die_after):
    emulator = AnthropicEmulator()
    async with provider_for(emulator.app(), "anthropic", "anthropic", MODEL) as provider:
        step, _, _, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT), die_after
    assert sorted(files.executed) == ["read_file", "search_files", "write_file"]
    assert_blocks_replayed(emulator)


async def test_without_thinking_blocks_the_emulator_rejects_as_anthropic_does():
    emulator = AnthropicEmulator()
    off = {"capability_overrides": {"replay_blocks": False}}
    async with provider_for(emulator.app(), "anthropic", "anthropic", MODEL, **off) as provider:
        step, state, _, _ = await run_seed(provider)
    assert isinstance(step, NextStepFailed)
    assert MUST_START.format(i=1, found="tool_use") in state.outcome.message
    assert "rule broken: Anthropic extended thinking" in state.outcome.message


def test_a_changed_byte_is_what_the_signature_catches():
    """The replayed block is the captured dict, not a rebuilt one: one changed byte, one 400."""
    emulator = AnthropicEmulator()
    body = {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    answer = emulator.answer(body)
    events = events_from_message(answer)
    choice = next(e for e in events if isinstance(e, ResponseDone)).response.primary
    call = choice.tool_calls[0]
    replayed = Message(role="assistant", content=None,
                       tool_calls=tuple(ToolCall(c.id, c.name, c.arguments_raw) for c in choice.tool_calls),
                       replay=choice.replay)
    results = [Message.tool(c.id, "{}") for c in choice.tool_calls]
    caps = profiles.resolve("anthropic", MODEL)
    follow = build_payload(ModelRequest((Message.user("hi"), replayed, *results)), caps, model=MODEL, max_output=None)
    assert emulator.validate(follow) is None
    tampered = ReplayBlock("anthropic", "thinking", {**choice.replay[0].data, "thinking": choice.replay[0].data["thinking"] + " "})
    bad = Message(role="assistant", content=None, tool_calls=replayed.tool_calls, replay=(tampered, *choice.replay[1:]))
    follow = build_payload(ModelRequest((Message.user("hi"), bad, *results)), caps, model=MODEL, max_output=None)
    assert emulator.validate(follow) == "messages.1.content.0: Invalid `signature` in `thinking` block"
    assert call.name == "read_file"


def test_blocks_of_another_wire_are_never_sent():
    caps = profiles.resolve("anthropic", MODEL)
    foreign = ReplayBlock("openai_responses", "reasoning", {"type": "reasoning", "id": "rs_1", "encrypted_content": "x"})
    message = Message(role="assistant", content="ok", replay=(foreign,))
    body = build_payload(ModelRequest((Message.user("a"), message)), caps, model=MODEL, max_output=None)
    content = body["messages"][1]["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    assert [(b["type"], b["text"]) for b in blocks] == [("text", "ok")]


def _older_turns(n: int) -> list[Message]:
    """Earlier exchanges of the conversation (plain text, as the host rebuilds them)."""
    out = []
    for i in range(n):
        out += [Message.user(f"早先的问题 {i}：" + "配置文件说明。" * 40), Message.assistant(f"早先的回答 {i}：" + "好的。" * 40)]
    return out


async def _probe_window(locked: bool) -> tuple:
    from agent.context.budget import ContextLimits
    from agent.events import ContextCompressed
    from agent.loop import LoopSettings

    results = {}
    from replay_seed import SeedFiles

    for window in range(2400, 4350, 150):
        emulator = AnthropicEmulator()
        limits = ContextLimits(context_window=window, requested_max_output=256, model_max_output=256, min_output=64)
        settings = LoopSettings(limits=limits, thinking_prefix_locked=locked)
        async with provider_for(emulator.app(), "anthropic", "anthropic", MODEL) as provider:
            step, state, sink, _ = await run_seed(
                provider, settings=settings, history=_older_turns(6), files=SeedFiles(padding=3000)
            )
        rounds = sorted({e.round_index for e in sink.events if isinstance(e, ContextCompressed)})
        results[window] = (step, rounds, emulator, state)
    return results


async def test_compression_never_rewrites_before_a_preserved_thinking_block():
    """Windows where the context outgrows the threshold after round 1 (thinking blocks exist then):
    unlocked, a new compression rewrites the run's prefix and the preserved-thinking check rejects it;
    locked, the run finishes: older turns are only dropped before the first block existed."""
    unlocked = await _probe_window(False)
    late = [w for w, (_, rounds, _, _) in unlocked.items() if rounds and max(rounds) >= 1]
    assert late, "no window makes compression happen after round 1"
    broken = [
        w for w in late
        if isinstance(unlocked[w][0], NextStepFailed) and "preserved thinking" in unlocked[w][0].message
    ]
    assert broken, "no window shows the preserved-thinking 400 when unlocked"
    locked = await _probe_window(True)
    for window in broken:
        step, rounds, emulator, _ = locked[window]
        assert all(r == 0 for r in rounds), window  # compressed only before any block existed
        if isinstance(step, NextStepFailed):
            # Too small to finish without rewriting: an honest context error naming the rule.
            assert step.error_class == "ContextTooLong" and "preserved thinking" in step.message, window
        else:
            assert step == NextStepFinalOutput(FINAL_TEXT), window
    assert any(locked[w][0] == NextStepFinalOutput(FINAL_TEXT) for w in broken)


async def _locked_run(window: int, die_after: int | None = None) -> tuple:
    from replay_seed import SeedFiles

    from agent.context.budget import ContextLimits
    from agent.events import ContextCompressed
    from agent.loop import LoopSettings

    emulator = AnthropicEmulator()
    limits = ContextLimits(context_window=window, requested_max_output=256, model_max_output=256, min_output=64)
    settings = LoopSettings(limits=limits, thinking_prefix_locked=True)
    async with provider_for(emulator.app(), "anthropic", "anthropic", MODEL) as provider:
        step, _, sink, _ = await run_seed(
            provider, settings=settings, history=_older_turns(6), files=SeedFiles(padding=3000), die_after=die_after
        )
    compressed = {e.round_index for e in sink.events if isinstance(e, ContextCompressed)}
    return step, compressed, emulator


async def test_a_resumed_run_re_applies_the_same_compression_before_preserved_thinking():
    """The compression plan is stored with the round, so a worker that resumes a run re-applies it:
    its requests are the uninterrupted run's, byte for byte, and the signed blocks stay valid."""
    for window in range(2400, 4350, 150):
        step, compressed, reference = await _locked_run(window)
        if step == NextStepFinalOutput(FINAL_TEXT) and compressed == {0}:
            break
    else:
        pytest.fail("no window where the locked run compresses in round 1 and finishes")
    for die_after in (1, 6, 12):
        resumed, _, emulator = await _locked_run(window, die_after)
        assert resumed == NextStepFinalOutput(FINAL_TEXT), die_after
        assert emulator.requests == reference.requests, die_after
