"""The agent loop (R-LOOP-1, 000 §15, 004 §4.4): ``run_step`` takes one step, ``run_agent`` steps to the end.

A step is exactly one of: request a model round, settle the tool calls of the last round, finish.
What to do is decided from ``RunState`` alone, so a step can always be retried after a crash.
"""

from __future__ import annotations

import asyncio

from agent.events import RunFailed, RunFinished
from agent.loop.calls import settle_round
from agent.loop.emit import emit
from agent.loop.guards import guard_reason
from agent.loop.history import continuation_chain, join_pieces
from agent.loop.model_round import Cancelled, prepare, stream_round
from agent.loop.policy import PolicyHook
from agent.loop.settings import LoopSettings
from agent.loop.steps import (
    NextStep,
    NextStepFailed,
    NextStepFinalOutput,
    NextStepInterruption,
    NextStepRunAgain,
    NextStepSignIn,
)
from agent.providers.base import Provider, exact_counter
from agent.providers.errors import ContextTooLong, ProviderError
from agent.providers.finish import context_full
from agent.providers.types import Usage
from agent.sink import Sink
from agent.state import RunOutcome, RunState
from agent.toolbox import Toolbox, ToolInfo

MAX_STEPS = 1_000  # a bug guard only; real runs end through the guards long before


async def run_agent(
    state: RunState,
    provider: Provider,
    toolbox: Toolbox,
    sink: Sink,
    settings: LoopSettings,
    policy: PolicyHook,
) -> NextStep:
    """Run until a final answer, an interruption for approvals or a sign-in, or a failure."""
    for _ in range(MAX_STEPS):
        step = await run_step(state, provider, toolbox, sink, settings, policy)
        if isinstance(step, NextStepRunAgain):
            continue
        if isinstance(step, NextStepFinalOutput | NextStepInterruption | NextStepSignIn | NextStepFailed):
            return step
        raise TypeError(f"unknown step {step!r}")
    raise RuntimeError("the agent loop took more steps than any guard allows")


async def run_step(
    state: RunState,
    provider: Provider,
    toolbox: Toolbox,
    sink: Sink,
    settings: LoopSettings,
    policy: PolicyHook,
) -> NextStep:
    if state.outcome is not None:
        return _from_outcome(state.outcome)
    if await sink.is_cancelled():
        return await _fail(state, sink, "Cancelled", "The run was stopped by the user.", "cancelled")
    tools = offered_tools(await toolbox.list_tools(), state.allowed_tools)
    last = state.last_round
    if last is None:
        return await _model_round(state, provider, tools, sink, settings, "normal", None)
    choice = last.choice
    # The last answer filled the context window: the next request is compressed first.
    full = context_full(choice.finish_reason_raw)
    acts_on_calls = (
        bool(choice.tool_calls) and last.kind != "final" and choice.finish_reason != "content_filter"
    )
    if acts_on_calls:
        calls = state.calls_of_round(last.round_index)
        if len(calls) < len(choice.tool_calls) or not all(c.terminal for c in calls):
            interruption = await settle_round(state, last, tools, toolbox, sink, settings, policy)
            return interruption or NextStepRunAgain()
        guard = guard_reason(state, settings)
        kind = "final" if guard else "normal"
        if stop := await _stop_reason(sink):
            return await _fail(state, sink, "BudgetExceeded", stop, "budget")
        return await _model_round(state, provider, tools, sink, settings, kind, guard, force=full)
    chain = continuation_chain(state)
    if choice.finish_reason == "length" and len(chain) - 1 < settings.max_continuations:
        if stop := await _stop_reason(sink):
            return await _fail(state, sink, "BudgetExceeded", stop, "budget")
        return await _model_round(state, provider, tools, sink, settings, "continuation", None, force=full)
    return await _finish(state, sink)


async def _stop_reason(sink: Sink) -> str | None:
    """Between rounds: a reason the host wants the run stopped before the next model request (a
    budget used up). The round before it finished with its tool calls; the next is never sent."""
    ask = getattr(sink, "stop_reason", None)
    return await ask() if ask is not None else None


def offered_tools(infos: list[ToolInfo], allowed: tuple[str, ...] | None) -> dict[str, ToolInfo]:
    """The tools this conversation may use: enabled, and in the allowed set when one is given."""
    return {
        i.spec.name: i
        for i in infos
        if i.disabled_reason is None and (allowed is None or i.spec.name in allowed)
    }


async def _model_round(
    state: RunState,
    provider: Provider,
    tools: dict[str, ToolInfo],
    sink: Sink,
    settings: LoopSettings,
    kind: str,
    guard: str | None,
    *,
    force: bool = False,
) -> NextStep:
    retries = 0
    while True:
        try:
            prepared = await prepare(
                state,
                list(tools.values()),
                sink,
                settings,
                kind,
                guard,
                force_compress=force,
                count_exact=exact_counter(provider),
            )
            await stream_round(state, provider, sink, settings, prepared, kind, guard)
            return NextStepRunAgain()
        except Cancelled:
            return await _fail(state, sink, "Cancelled", "The run was stopped by the user.", "cancelled")
        except ContextTooLong as exc:
            if force:
                message = f"The conversation no longer fits the model's context window: {exc.message}"
                return await _fail(state, sink, "ContextTooLong", message, exc.code)
            force = True  # R-CTX-3: shrink the working context as far as it goes and try once more
        except ProviderError as exc:
            if not exc.retryable or retries >= settings.round_retries:
                return await _fail(state, sink, type(exc).__name__, exc.message, exc.code)
            if exc.retry_after is not None and exc.retry_after > settings.max_round_retry_wait:
                # Retrying sooner than the server asked fails again (and may count against the limit).
                message = (
                    f"{exc.message} (the provider asks to wait {exc.retry_after:g} s before retrying, "
                    f"longer than a run waits: {settings.max_round_retry_wait:g} s)"
                )
                return await _fail(state, sink, type(exc).__name__, message, exc.code)
            retries += 1
            wait = exc.retry_after if exc.retry_after is not None else 1.0
            await asyncio.sleep(wait)


async def _finish(state: RunState, sink: Sink) -> NextStep:
    chain = continuation_chain(state)
    text = join_pieces([r.choice.text for r in chain])
    partial = chain[-1].choice.finish_reason in ("length", "content_filter")
    await emit(state, sink, RunFinished(text=text, usage=total_usage(state), partial=partial))
    return NextStepFinalOutput(text=text, partial=partial)


async def _fail(state: RunState, sink: Sink, error_class: str, message: str, code: str | None) -> NextStep:
    await emit(state, sink, RunFailed(error_class=error_class, message=message, code=code))
    return NextStepFailed(error_class=error_class, message=message, code=code)


def _from_outcome(outcome: RunOutcome) -> NextStep:
    if outcome.kind == "finished":
        return NextStepFinalOutput(text=outcome.text, partial=outcome.partial)
    return NextStepFailed(outcome.error_class or "Error", outcome.message or "", outcome.code)


def total_usage(state: RunState) -> Usage:
    def total(field: str) -> int | None:
        values = [getattr(r.response.usage, field) for r in state.rounds]
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return Usage(
        prompt_tokens=total("prompt_tokens"),
        completion_tokens=total("completion_tokens"),
        total_tokens=total("total_tokens"),
        cached_tokens=total("cached_tokens"),
        reasoning_tokens=total("reasoning_tokens"),
        cache_write_tokens=total("cache_write_tokens"),
    )
