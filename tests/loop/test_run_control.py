"""Stopping a run and provider errors at the loop level (R-RUN-4 seen from the loop, R-PROV-6)."""

from loop_doubles import FuncToolbox, ScriptedProvider, drive, reply, start_messages

from agent.events import RunFailed
from agent.loop import AllowAll, LoopSettings, NextStepFailed, run_agent
from agent.providers.errors import AuthenticationFailed, TransientUpstream
from agent.sink import ListSink
from agent.state import RunState


async def test_cancelled_run_stops_before_the_next_request():
    provider = ScriptedProvider(lambda req: reply("never"))
    sink = ListSink()
    sink.cancelled = True
    state = RunState.start("r", start_messages())
    step = await run_agent(state, provider, FuncToolbox({}), sink, LoopSettings(), AllowAll())
    assert isinstance(step, NextStepFailed) and step.code == "cancelled" and provider.requests == []
    assert sink.of_type(RunFailed)[0].code == "cancelled"


async def test_retryable_provider_error_is_retried_within_a_bound():
    answers = [TransientUpstream("502 bad gateway", retry_after=0), reply("recovered")]
    provider = ScriptedProvider(lambda req: answers.pop(0))
    step, _, _ = await drive(provider, FuncToolbox({}))
    assert step.text == "recovered" and len(provider.requests) == 2

    provider = ScriptedProvider(lambda req: TransientUpstream("502", retry_after=0))
    step, _, _ = await drive(provider, FuncToolbox({}), settings=LoopSettings(round_retries=1))
    assert isinstance(step, NextStepFailed) and len(provider.requests) == 2


async def test_permanent_provider_error_fails_with_a_clear_reason():
    provider = ScriptedProvider(lambda req: AuthenticationFailed("invalid api key", status=401))
    step, state, sink = await drive(provider, FuncToolbox({}))
    assert step == NextStepFailed("AuthenticationFailed", "invalid api key", "auth_failed")
    assert state.outcome.kind == "failed" and len(provider.requests) == 1
    # A finished run stays finished: running it again does nothing.
    again = await run_agent(state, provider, FuncToolbox({}), ListSink(), LoopSettings(), AllowAll())
    assert again == step and len(provider.requests) == 1
