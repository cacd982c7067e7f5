"""One model round: build the request (budget, compression), stream it, store the response."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass

from agent import events as ev
from agent.context import (
    Calibration,
    CompressionPlan,
    Compressor,
    TokenCounter,
    output_budget,
    over_threshold,
)
from agent.loop.emit import emit
from agent.loop.history import continuation_chain, request_messages, transcript
from agent.loop.settings import LoopSettings
from agent.messages import Message, ToolSpec
from agent.providers import types as pt
from agent.providers.base import ExactCounter, Provider
from agent.providers.errors import ContextTooLong, MalformedStream
from agent.providers.registry import describe_request
from agent.providers.retry import retry_listener
from agent.replay import summarise
from agent.sink import Sink
from agent.state import RunState
from agent.toolbox import ToolInfo


class Cancelled(Exception):
    """The user stopped the run while a round was streaming."""


@dataclass(frozen=True, slots=True)
class PreparedRound:
    request: pt.ModelRequest
    estimated_input: int
    raw_input: int = 0  # our uncalibrated count: what the next round's calibration compares with
    # The compression in force for this request (recorded with the round; see compress.py).
    plan: CompressionPlan | None = None


def calibration(state: RunState, prior: float | None = None) -> Calibration:
    """Provider-reported prompt tokens of the last round against our *raw* count for it (R-CTX-1).

    The raw (uncalibrated) count is what each round stores, so the ratio never compares against an
    already-calibrated number (which made every other round uncalibrated). Before this run has a
    round, ``prior`` is the ratio learned for this provider and model in earlier runs.
    """
    for record in reversed(state.rounds):
        raw, reported = record.request.get("raw_input_tokens"), record.response.usage.prompt_tokens
        if raw and reported:
            return Calibration.from_observation(raw, reported)
    return Calibration(ratio=prior) if prior else Calibration()


def anchored_estimate(
    state: RunState,
    messages: list[Message],
    specs: tuple[ToolSpec, ...],
    counter: TokenCounter,
    ratio: Calibration,
    prior: float | None = None,
) -> int | None:
    """Last round's reported prompt tokens + the calibrated count of what was appended since.

    Exact for everything the provider already counted; only the new messages are estimated, at
    the ratio of what was *appended* between the last two rounds when there are two, else at the
    ratio learned over earlier runs, else at the last round's (whose count is mostly the fixed
    prefix: system prompt and tool schemas, which tokenize unlike tool results). None when the last
    request is not a prefix of this one (compressed, other tools): then the whole request is
    estimated.
    """
    if not state.rounds:
        return None
    last = state.rounds[-1]
    sent, reported = last.request.get("messages"), last.response.usage.prompt_tokens
    if not sent or not reported or len(sent) > len(messages):
        return None
    if [t.to_dict() for t in specs] != last.request.get("tools"):
        return None
    if [m.to_dict() for m in messages[: len(sent)]] != sent:
        return None
    appended = _appended_ratio(state) or (Calibration(ratio=prior) if prior else ratio)
    return reported + appended.apply(sum(counter.count_message(m) for m in messages[len(sent) :]))


def _appended_ratio(state: RunState) -> Calibration | None:
    if len(state.rounds) < 2:
        return None
    before, last = state.rounds[-2], state.rounds[-1]
    raw_before, raw_last = before.request.get("raw_input_tokens"), last.request.get("raw_input_tokens")
    seen_before, seen_last = before.response.usage.prompt_tokens, last.response.usage.prompt_tokens
    if not raw_before or raw_last is None or seen_before is None or seen_last is None:
        return None
    if raw_last - raw_before <= 0:
        return None
    return Calibration.from_observation(raw_last - raw_before, seen_last - seen_before)


def ratio_unknown(state: RunState, settings: LoopSettings) -> bool:
    """No ratio learned yet for what this round's estimate rests on: the first request of a model
    never seen before, or the second round's appended content before any run taught its ratio."""
    if not state.rounds:
        return settings.token_ratio is None
    return settings.appended_token_ratio is None and _appended_ratio(state) is None


async def count_exactly(
    count: ExactCounter,
    messages: list[Message],
    specs: tuple[ToolSpec, ...],
    tool_choice: pt.ToolChoice | None,
    settings: LoopSettings,
) -> int | None:
    """The provider's own count of the uncompressed request (the output limit only shapes thinking)."""
    probe = pt.ModelRequest(
        messages=tuple(messages),
        tools=specs,
        tool_choice=tool_choice,
        max_output_tokens=output_budget(settings.limits, 0),
    )
    return await count(probe)


def tools_off(state: RunState, kind: str) -> bool:
    if kind == "final":
        return True
    return kind == "continuation" and bool(state.rounds) and continuation_chain(state)[0].kind == "final"


async def prepare(
    state: RunState,
    tools: list[ToolInfo],
    sink: Sink,
    settings: LoopSettings,
    kind: str,
    guard: str | None,
    *,
    force_compress: bool = False,
    count_exact: ExactCounter | None = None,
) -> PreparedRound:
    counter = TokenCounter(use_bpe=settings.use_bpe, cjk_per_char=settings.cjk_tokens_per_char)
    messages = request_messages(state, kind, guard)
    off = tools_off(state, kind)
    # R-LOOP-8: the spec is sent exactly as the toolbox gives it (admin overrides are applied there).
    specs: tuple[ToolSpec, ...] = tuple(t.spec for t in tools)
    if off and not settings.tool_choice_none_supported:
        specs = ()
    tool_choice: pt.ToolChoice | None = ("none" if off else "auto") if specs else None
    ratio = calibration(state, settings.token_ratio)
    exact: tuple[list[Message], int] | None = None
    if count_exact is not None and ratio_unknown(state, settings):
        # A cold estimate can be 30% off (a newer tokenizer): ask the provider once, while cold.
        counted = await count_exactly(count_exact, messages, specs, tool_choice, settings)
        if counted is not None:
            exact = (messages, counted)
            ratio = Calibration.from_observation(counter.count_request(messages, specs), counted)
    fitted = _Fit(state, sink, counter, settings, specs, ratio, exact)
    messages, estimated, plan = await fitted.fit(messages, len(transcript(state)), force_compress)
    raw = counter.count_request(messages, specs)
    budget = output_budget(settings.limits, estimated)
    if budget < settings.limits.min_output:
        raise ContextTooLong(
            f"the input (~{estimated} tokens) leaves no room for an answer in the context window"
        )
    request = pt.ModelRequest(
        messages=tuple(messages),
        tools=specs,
        tool_choice=tool_choice,
        max_output_tokens=budget,
        temperature=settings.temperature,
        n=settings.n,
        parallel_tool_calls=settings.parallel_tool_calls if specs and not off else None,
        cache_key=settings.cache_key,
    )
    return PreparedRound(request, estimated, raw, plan)


def last_plan(state: RunState) -> CompressionPlan | None:
    return CompressionPlan.from_dict(state.rounds[-1].request.get("compression")) if state.rounds else None


@dataclass
class _Fit:
    """Makes the request fit the window with hysteresis (R-CTX-2): keep the last round's compression
    while it still fits; otherwise compress anew, from the threshold down to the target."""

    state: RunState
    sink: Sink
    counter: TokenCounter
    settings: LoopSettings
    specs: tuple[ToolSpec, ...]
    ratio: Calibration
    # The provider's count of one message list (the uncompressed request), when it was asked.
    exact: tuple[list[Message], int] | None = None

    def estimate(self, messages: list[Message]) -> int:
        if self.exact is not None and self.exact[0] is messages:
            return self.exact[1]
        anchored = anchored_estimate(
            self.state, messages, self.specs, self.counter, self.ratio, self.settings.appended_token_ratio
        )
        return anchored or self.ratio.apply(self.counter.count_request(messages, self.specs))

    async def fit(
        self, messages: list[Message], prefix: int, force: bool
    ) -> tuple[list[Message], int, CompressionPlan | None]:
        limits = self.settings.limits
        previous = last_plan(self.state)
        if self.settings.thinking_prefix_locked:
            if holds_thinking(messages[:prefix]):
                return self.locked(Compressor(self.counter, limits), previous, messages, prefix, force)
            if not self.state.rounds:
                # Before the run's first thinking block exists is the last time anything may be
                # shrunk: make room early (above the target, not the threshold) by dropping whole
                # older turns, so the run can grow without rewriting what its blocks were made on.
                limits = dataclasses.replace(limits, compress_threshold=limits.compress_target)
        compressor = Compressor(self.counter, limits)
        if previous is not None and previous.prefix <= prefix and not force:
            kept = list(compressor.apply(previous, messages, self.specs))
            if not over_threshold(limits, self.estimate(kept)):
                return kept, self.estimate(kept), previous
        elif not force and not over_threshold(limits, self.estimate(messages)):
            return messages, self.estimate(messages), None
        # The trailing prompt of a continuation or final round is not part of the plan: it is not
        # in the next round's history at that place.
        plan = CompressionPlan(prefix=prefix, target=compressor.low_water(), force=force)
        head, steps = compressor.shrink(messages[:prefix], self.specs, force=force, target=plan.target)
        for step in steps:
            await emit(
                self.state,
                self.sink,
                ev.ContextCompressed(
                    round_index=len(self.state.rounds),
                    step=step.step,
                    detail=step.detail,
                    tokens_before=self.ratio.apply(step.tokens_before),
                    tokens_after=self.ratio.apply(step.tokens_after),
                ),
            )
        shrunk = [*head, *messages[prefix:]]
        return shrunk, self.estimate(shrunk), plan

    def locked(
        self,
        compressor: Compressor,
        previous: CompressionPlan | None,
        messages: list[Message],
        prefix: int,
        force: bool,
    ) -> tuple[list[Message], int, CompressionPlan | None]:
        """Preserved thinking: "nothing before the thinking block has changed" or the block is invalid
        (docs/providers.md). The last plan is re-applied (same bytes) and nothing is compressed anew;
        older turns can only have been dropped before the run's first thinking block existed."""
        kept = messages
        if previous is not None and previous.prefix <= prefix:
            kept = list(compressor.apply(previous, messages, self.specs))
        if force:
            raise ContextTooLong(
                "the run holds preserved thinking blocks, and compressing anything before them would "
                "invalidate them (Anthropic preserved thinking); start a new conversation or turn "
                "thinking off"
            )
        return kept, self.estimate(kept), previous if kept is not messages else None


def holds_thinking(messages: list[Message]) -> bool:
    """True when a message carries Anthropic thinking blocks (their prefix is locked)."""
    return any(b.wire == "anthropic" for m in messages for b in m.replay)


def request_record(provider: Provider, prepared: PreparedRound, kind: str, guard: str | None) -> dict:
    """The request as stored in the trace (R-MSG-2). The loop never holds secrets; adapters add auth,
    and ``wire`` is the adapter's own description of what it sent, secrets removed."""
    req = prepared.request
    return {
        # Sealed blobs (signatures, encrypted reasoning) are recorded by size: their bytes are kept
        # once, with the round that produced them (RoundFinished.response).
        "wire": summarise(describe_request(provider, req)),
        "messages": [_message_record(m) for m in req.messages],
        "tools": [t.to_dict() for t in req.tools],
        "tool_choice": req.tool_choice,
        "max_output_tokens": req.max_output_tokens,
        "temperature": req.temperature,
        "n": req.n,
        "parallel_tool_calls": req.parallel_tool_calls,
        "estimated_input_tokens": prepared.estimated_input,
        "raw_input_tokens": prepared.raw_input,
        "compression": prepared.plan.to_dict() if prepared.plan else None,
        "kind": kind,
        "guard": guard,
    }


def _message_record(message: Message) -> dict:
    data = summarise(message.to_dict())
    if message.replay:
        data["replay"] = [{"type": b.type, "opaque_bytes": b.opaque_bytes} for b in message.replay]
    return data


async def stream_round(
    state: RunState,
    provider: Provider,
    sink: Sink,
    settings: LoopSettings,
    prepared: PreparedRound,
    kind: str,
    guard: str | None,
) -> None:
    """Send the request, forward deltas of choice 0 live, store the assembled response (durable)."""
    index = len(state.rounds)
    await sink.emit(
        ev.RoundStarted(round_index=index, kind=kind, model=provider.model, provider=provider.name)
    )
    started = time.monotonic()
    ttft: float | None = None
    response: pt.AssembledResponse | None = None
    seen = 0

    async def retried(attempt: int, error: Exception, wait: float) -> None:
        message = str(getattr(error, "message", error))[:300]
        await sink.emit(ev.RoundRetried(index, attempt, type(error).__name__, message, round(wait * 1000, 1)))

    listening = retry_listener.set(retried)
    try:
        async for event in provider.stream(prepared.request):
            seen += 1
            if seen % settings.cancel_check_every == 0 and await sink.is_cancelled():
                raise Cancelled()
            if settings.turn_every and seen % settings.turn_every == 0:
                # The runs sharing this loop get a turn: a stream whose socket always has data
                # never waits by itself (~1-2 ms of parsing per 32 events of a flood).
                await asyncio.sleep(0)
            if isinstance(event, pt.ResponseDone):
                response = event.response
                continue
            live = _live_event(index, event)
            if live is not None:
                ttft = ttft if ttft is not None else (time.monotonic() - started) * 1000
                await sink.emit(live)
    finally:
        retry_listener.reset(listening)
    if response is None:
        raise MalformedStream("the provider stream ended without a response")
    primary = response.primary
    await emit(
        state,
        sink,
        ev.RoundFinished(
            round_index=index,
            kind=kind,
            provider=provider.name,
            model=response.model or provider.model,
            request=request_record(provider, prepared, kind, guard),
            response=response,
            finish_reason=primary.finish_reason,
            finish_reason_raw=primary.finish_reason_raw,
            usage=response.usage,
            ttft_ms=ttft,
            duration_ms=(time.monotonic() - started) * 1000,
        ),
    )


def _live_event(index: int, event: pt.ModelEvent) -> ev.Event | None:
    # Only choice 0 is shown live: the others are never acted on (R-MSG-3), they stay in the trace.
    if isinstance(event, pt.TextDelta) and event.choice == 0:
        return ev.TextDelta(round_index=index, text=event.text)
    if isinstance(event, pt.ReasoningDelta) and event.choice == 0:
        return ev.ReasoningDelta(round_index=index, text=event.text)
    if isinstance(event, pt.ToolCallDelta) and event.choice == 0:
        return ev.ToolCallDelta(
            round_index=index, index=event.index, call_id=event.id, name=event.name, arguments=event.arguments
        )
    return None
