"""Gemini 3 on its OpenAI-compatible endpoint: the thought signature on each tool call's
extra_content is kept per call and echoed back; the gemini preset fits what the endpoint accepts."""

from __future__ import annotations

import json

import pytest
from replay_chat_emulators import GeminiEmulator
from replay_harness import provider_for, run_seed
from replay_seed import FINAL_TEXT, expected_report

from agent.loop.steps import NextStepFailed, NextStepFinalOutput
from agent.providers import profiles
from agent.providers.error_map import map_error
from agent.providers.errors import BadRequest
from agent.providers.gemini_schema import sanitise

MODEL = "gemini-3-pro-preview"


def assert_signatures_echoed(emulator: GeminiEmulator) -> None:
    first_answer_calls = None
    for body in emulator.requests:
        assert "parallel_tool_calls" not in body and "n" not in body
        assert body["messages"][0]["role"] == "system"
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        if assistants:
            calls = assistants[0]["tool_calls"]
            assert "thought_signature" in calls[0]["extra_content"]["google"]
            assert "extra_content" not in calls[1]  # only the first parallel call is signed
            first_answer_calls = first_answer_calls or calls
            assert calls == first_answer_calls  # the same bytes every round


@pytest.mark.parametrize("stream", [True, False])
async def test_seed_three_rounds_against_gemini_3(stream):
    emulator = GeminiEmulator()
    overrides = {} if stream else {"capability_overrides": {"stream": False}}
    async with provider_for(emulator.app(), "openai_chat", "gemini", MODEL, **overrides) as provider:
        step, state, _, files = await run_seed(provider)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert len(emulator.requests) == 3
    assert_signatures_echoed(emulator)
    assert state.rounds[0].choice.tool_calls[0].provider_extra["extra_content"]["google"]["thought_signature"]


@pytest.mark.parametrize("die_after", range(1, 9))
async def test_resumed_after_a_crash_echoes_the_stored_signatures(die_after):
    emulator = GeminiEmulator()
    async with provider_for(emulator.app(), "openai_chat", "gemini", MODEL) as provider:
        step, _, _, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT), die_after
    assert sorted(files.executed) == ["read_file", "search_files", "write_file"]
    assert_signatures_echoed(emulator)


async def test_the_openai_preset_against_gemini_fails_with_googles_words_and_the_rule():
    """Pointed at Gemini with the plain openai preset, round 1 already fails on parallel_tool_calls;
    without the echo, round 2 fails on the missing signature: both with Google's message, parsed
    from the list-shaped body, and the signature one with the rule named."""
    emulator = GeminiEmulator()
    async with provider_for(emulator.app(), "openai_chat", "openai", MODEL) as provider:
        step, state, _, _ = await run_seed(provider)
    assert isinstance(step, NextStepFailed)
    assert state.outcome.message.startswith('Invalid JSON payload received. Unknown name "parallel_tool_calls"')
    emulator = GeminiEmulator()
    no_echo = {"capability_overrides": {"echo_tool_call_extra": False}}
    async with provider_for(emulator.app(), "openai_chat", "gemini", MODEL, **no_echo) as provider:
        step, state, _, _ = await run_seed(provider)
    assert isinstance(step, NextStepFailed)
    assert state.outcome.message.startswith("Function call is missing a thought_signature in functionCall parts.")
    assert "rule broken: Gemini 3" in state.outcome.message


def test_list_shaped_error_bodies_are_parsed():
    body = [{"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}]
    error = map_error(400, body)
    assert isinstance(error, BadRequest) and str(error).startswith("Invalid JSON payload received.")


def test_schema_sanitiser_keeps_meaning_and_drops_what_gemini_rejects():
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "mode": {"const": "fast"},
            "limit": {"type": ["integer", "null"], "exclusiveMinimum": 0},
            "tags": {"type": "array", "items": {"type": "string", "propertyNames": {"pattern": "x"}}},
            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
        },
        "required": ["mode", "ghost"],
    }
    assert sanitise(schema) == {
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast"]},
            "limit": {"type": "integer", "nullable": True, "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        },
        "required": ["mode"],
    }
    assert profiles.resolve("gemini", MODEL).schema_dialect == "gemini"
    assert json.dumps(sanitise({"type": "object"})) == '{"type": "object"}'


async def test_a_round_stored_before_signatures_were_kept_goes_on_with_the_documented_stand_in():
    """An old row (no provider_extra) resumed under the gemini preset: the first call of the step
    carries "skip_thought_signature_validator" and the run finishes; without the stand-in it fails
    with Google's message and the rule."""
    from replay_chat_emulators import SKIP_VALIDATOR
    from replay_harness import StoringSink
    from replay_seed import SeedFiles, start_messages

    from agent.loop import LoopSettings, RiskPolicy, run_agent
    from agent.state import RunState

    emulator = GeminiEmulator()
    async with provider_for(emulator.app(), "openai_chat", "gemini", MODEL) as provider:
        _, _, sink, files = await run_seed(provider, die_after=1, resume=False)
    kind, payload = sink.rows[0]
    for call in payload["response"]["choices"][0]["tool_calls"]:
        call.pop("provider_extra", None)  # as rows were stored before this existed
    old_rows = StoringSink()
    old_rows.rows = [(kind, payload)]
    for placeholder, finished in (("skip_thought_signature_validator", True), ("", False)):
        emulator = GeminiEmulator()
        overrides = {"capability_overrides": {"unsigned_call_signature": placeholder}}
        async with provider_for(emulator.app(), "openai_chat", "gemini", MODEL, **overrides) as provider:
            state = RunState.rebuild("seed", start_messages(), old_rows.stored())
            step = await run_agent(state, provider, SeedFiles(), StoringSink(), LoopSettings(), RiskPolicy())
        sent = emulator.requests[0]["messages"][2]["tool_calls"][0]
        if finished:
            assert step == NextStepFinalOutput(FINAL_TEXT)
            assert sent["extra_content"]["google"]["thought_signature"] == SKIP_VALIDATOR
        else:
            assert isinstance(step, NextStepFailed) and "missing a thought_signature" in step.message
            assert "extra_content" not in sent
