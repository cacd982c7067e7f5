"""The provider interface: one async stream method, and ``complete`` built on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from agent.providers.types import AssembledResponse, ModelEvent, ModelRequest, ResponseDone


class Provider(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield deltas as they arrive, ending with exactly one ``ResponseDone``."""
        ...


async def complete(provider: Provider, request: ModelRequest) -> AssembledResponse:
    async for event in provider.stream(request):
        if isinstance(event, ResponseDone):
            return event.response
    raise RuntimeError("provider stream ended without ResponseDone")


# Counts a request's input tokens exactly, at the provider; None when it cannot (no endpoint, an error).
ExactCounter = Callable[[ModelRequest], Awaitable[int | None]]


def exact_counter(provider: Provider) -> ExactCounter | None:
    """The provider's pre-flight token counter, if its wire has one (``count_input_tokens``)."""
    return getattr(provider, "count_input_tokens", None)
