"""Helpers shared by the provider tests: build a provider against the fixture server, collect."""

from __future__ import annotations

from typing import Any

import httpx
from provider_cases import Case

from agent.messages import Message
from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from agent.providers.types import (
    AssembledResponse,
    ModelEvent,
    ModelRequest,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
)

USER_REQUEST = ModelRequest(messages=(Message.user("hello"),))


class SleepRecorder:
    """Stands in for asyncio.sleep in retries: records the delay, does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def make_provider(
    http: httpx.AsyncClient,
    base_url: str,
    kind: str,
    preset: str = "",
    *,
    sleep: Any = None,
    **settings: Any,
) -> Any:
    base = base_url + ("" if kind == "anthropic" else "/v1")
    config = ProviderSettings(
        name="test", kind=kind, base_url=base, model=settings.pop("model", "m"), preset=preset, **settings
    )
    return build_provider(config, http, sleep=sleep or SleepRecorder())


async def collect(provider: Any, request: ModelRequest = USER_REQUEST) -> list[ModelEvent]:
    return [event async for event in provider.stream(request)]


def response_of(events: list[ModelEvent]) -> AssembledResponse:
    done = [e for e in events if isinstance(e, ResponseDone)]
    assert len(done) == 1 and isinstance(events[-1], ResponseDone), "exactly one ResponseDone, last"
    return done[0].response


def assert_case(case: Case, events: list[ModelEvent]) -> None:
    """Field by field against the expectation, and the deltas must add up to the result."""
    response = response_of(events)
    choice = response.primary
    assert choice.text == case.text
    assert choice.reasoning.startswith(case.reasoning_prefix)
    assert choice.refusal == case.refusal
    assert choice.finish_reason == case.finish
    assert choice.finish_reason_raw == case.finish_raw
    assert [c.id for c in choice.tool_calls] == [c.id for c in case.calls]
    assert [c.name for c in choice.tool_calls] == [c.name for c in case.calls]
    assert [c.arguments for c in choice.tool_calls] == [c.arguments for c in case.calls]
    assert [c.truncated for c in choice.tool_calls] == [c.truncated for c in case.calls]
    for call in choice.tool_calls:
        assert (call.parse_error is None) == (call.arguments is not None)
    for key, value in case.usage.items():
        assert getattr(response.usage, key) == value, key
    if case.response_id is not None:
        assert response.response_id == case.response_id
    if case.model is not None or case.id.startswith("vllm"):
        assert response.model == case.model
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == choice.text
    for n, call in enumerate(choice.tool_calls):
        fragments = "".join(e.arguments for e in events if isinstance(e, ToolCallDelta) and e.index == n)
        assert fragments == call.arguments_raw
