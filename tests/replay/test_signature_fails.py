"""Bad input: a signature that fails. Sealed reasoning is bound to the account and endpoint that
issued it; when the provider's account changes between rounds (here: the emulator signs and verifies
with another key from round 2 on), the provider refuses the replayed parts. The protocol allows no
way on (the parts are required back and cannot be re-made), so the run fails with the provider's own
message and the rule it broke, after one request (never retried, never a bare 400), streamed and
resumed after a crash alike."""

from __future__ import annotations

import contextlib

import pytest
from replay_anthropic_emulator import AnthropicEmulator
from replay_chat_emulators import GeminiEmulator
from replay_emulator_http import signing_key
from replay_harness import StoringSink, WorkerDied, _died, provider_for
from replay_responses_emulator import ResponsesEmulator
from replay_seed import SeedFiles, start_messages

from agent.events import RoundFinished
from agent.loop import LoopSettings, RiskPolicy, run_agent
from agent.loop.steps import NextStepFailed
from agent.state import RunState

CASES = {
    "anthropic": (
        AnthropicEmulator, "anthropic", "anthropic", "claude-fable-5-1",
        "messages.1.content.0: Invalid `signature` in `thinking` block", "rule broken: Anthropic extended thinking",
    ),
    "gemini": (
        GeminiEmulator, "openai_chat", "gemini", "gemini-3-pro-preview",
        "Unable to submit request because Thought signature is not valid.", "rule broken: Gemini 3",
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
