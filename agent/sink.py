"""The seam between the engine and whatever stores and publishes its events."""

from __future__ import annotations

from typing import Protocol

from agent.events import Event


class Sink(Protocol):
    async def emit(self, event: Event) -> None:
        """Persist durable events (before returning) and publish every event."""
        ...

    async def is_cancelled(self) -> bool:
        """True once the user asked to stop this run (R-RUN-4)."""
        ...


class ListSink:
    """A test double: keeps every event in order; cancellation set by hand."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.cancelled = False

    async def emit(self, event: Event) -> None:
        self.events.append(event)

    async def is_cancelled(self) -> bool:
        return self.cancelled

    def of_type(self, kind: type) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]
