"""Bad input: a signature that fails. Sealed reasoning is bound to the account and endpoint that
issued it; when the provider's account changes between rounds (here: the emulator signs and verifies
with another key from round 2 on), the provider refuses the replayed parts, streamed and resumed
after a crash alike.

* Claude and Responses allow no way on (the parts are required back with the tool call and cannot be
  re-made): the run fails with the provider's own message and the rule it broke, after one request
  (never retried, never a bare 400).
* Gemini 3 documents a stand-in signature for history whose signatures it did not issue: the refused
  request is sent once more with it, and the run goes on."""

from __future__ import annotations

import contextlib

import pytest
from replay_anthropic_emulator import AnthropicEmulator
from replay_chat_emulators import SKIP_VALIDATOR, GeminiEmulator
from replay_emulator_http import signing_key
from replay_harness import StoringSink, WorkerDied, _died, provider_for
from replay_responses_emulator import ResponsesEmulator
from replay_seed import FINAL_TEXT, SeedFiles, expected_report, start_messages

from agent.events import RoundFinished
from agent.loop import LoopSettings, RiskPolicy, run_agent
from agent.loop.steps import NextStepFailed, NextStepFinalOutput
from agent.state import RunState

CASES = {
    "anthropic": (
        AnthropicEmulator, "anthropic", "anthropic", "claude-fable-5-1",
        "messages.1.content.0: Invalid `signature` in `thinking` block", "rule broken: Anthropic extended thinking",
    ),
    "responses": (
        ResponsesEmulator, "openai_responses", "openai_responses", "gpt-5.2",
        "could not be verified.", "rule broken: OpenAI Responses",
    ),
}


class AccountSwitch(StoringSink):
    """Once round 1 is stored, the provider's account changes; with ``die`` the worker dies there too."""

    def __init__(self, stack: contextlib.ExitStack, die: bool) -> None:
        super().__init__(None)
        self.stack, self.die, self.switched = stack, die, False

    async def emit(self, event):
        await super().emit(event)
        if isinstance(event, RoundFinished) and not self.switched:
            self.switched = True
            self.stack.enter_context(signing_key(b"another account of the same provider"))
            if self.die:
                self.dead = True
                raise WorkerDied("worker killed after round 1")


@pytest.mark.parametrize("resumed", [False, True], ids=["streamed", "resumed"])
@pytest.mark.parametrize("name", list(CASES))
async def test_a_signature_that_fails_ends_the_run_with_the_providers_words_and_the_rule(name, resumed):
    factory, kind, preset, model, words, rule = CASES[name]
    emulator = factory()
    files = SeedFiles()
    async with provider_for(emulator.app(), kind, preset, model) as provider:
        with contextlib.ExitStack() as stack:
            sink = AccountSwitch(stack, die=resumed)
            state = RunState.start("seed", start_messages())
            try:
                step = await run_agent(state, provider, files, sink, LoopSettings(), RiskPolicy())
            except Exception as exc:  # noqa: BLE001 - the parallel tools raise it in an ExceptionGroup
                if not (resumed and _died(exc)):
                    raise
                sink.dead = False  # the next worker resumes from what was stored
                state = RunState.rebuild("seed", start_messages(), sink.stored())
                step = await run_agent(state, provider, files, sink, LoopSettings(), RiskPolicy())
    assert isinstance(step, NextStepFailed), step
    assert step.error_class == "BadRequest"
    assert words in state.outcome.message and rule in state.outcome.message, state.outcome.message
    assert "docs/providers.md" in state.outcome.message
    assert len(emulator.requests) == 2  # round 1, then the refused round 2: no retry of a doomed request
    assert sorted(files.executed) == ["read_file", "search_files"]  # round 1's tools ran once


@pytest.mark.parametrize("resumed", [False, True], ids=["streamed", "resumed"])
async def test_gemini_goes_on_with_the_documented_stand_in_when_a_signature_is_refused(resumed):
    emulator = GeminiEmulator()
    files = SeedFiles()
    async with provider_for(emulator.app(), "openai_chat", "gemini", "gemini-3-pro-preview") as provider:
        with contextlib.ExitStack() as stack:
            sink = AccountSwitch(stack, die=resumed)
            state = RunState.start("seed", start_messages())
            try:
                step = await run_agent(state, provider, files, sink, LoopSettings(), RiskPolicy())
            except Exception as exc:  # noqa: BLE001
                if not (resumed and _died(exc)):
                    raise
                sink.dead = False
                state = RunState.rebuild("seed", start_messages(), sink.stored())
                step = await run_agent(state, provider, files, sink, LoopSettings(), RiskPolicy())
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    # Rounds 2 and 3: refused with the foreign signature of round 1, then accepted with the stand-in.
    assert len(emulator.requests) == 5
    refused, retried = emulator.requests[1], emulator.requests[2]
    signed = [m["tool_calls"][0].get("extra_content") for m in refused["messages"] if m.get("tool_calls")]
    assert signed and signed[0]["google"]["thought_signature"] != SKIP_VALIDATOR
    stand_ins = [m["tool_calls"][0]["extra_content"] for m in retried["messages"] if m.get("tool_calls")]
    assert stand_ins == [{"google": {"thought_signature": SKIP_VALIDATOR}}]
    # What is stored is still what Gemini issued: the stand-in is only ever on the wire.
    assert state.rounds[0].choice.tool_calls[0].provider_extra == {"extra_content": signed[0]}


@pytest.mark.parametrize(
    "words",
    [
        "Corrupted thought signature.",  # Gemini API (google-gemini/gemini-cli#13467)
        "Invalid thought signature.",  # lbjlaq/Antigravity-Manager#3342
        "Unable to submit request because Thought signature is not valid.",  # Vertex AI (decolua/9router#301)
    ],
)
def test_each_of_googles_wordings_for_a_refused_signature_is_recognised(words):
    from agent.providers.error_map import map_error
    from agent.providers.http import FOREIGN_SIGNATURE

    error = map_error(400, [{"error": {"code": 400, "message": words, "status": "INVALID_ARGUMENT"}}])
    assert error.message.startswith(words) and "rule broken: Gemini 3" in error.message
    assert FOREIGN_SIGNATURE.search(error.message)
