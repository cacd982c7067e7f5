"""The seam between the engine and whatever stores and publishes its events."""

from __future__ import annotations

from typing import Protocol

from agent.events import Event
from agent.toolbox import LinkAnswer, LinkRequest


class Sink(Protocol):
    async def emit(self, event: Event) -> None:
        """Persist durable events and publish every event.

        A durable event is stored before ``emit`` returns, except that a host may hold one whose
        step has no effect outside the run (a tool call proposed or approved, a round that asks for
        no tool call) and store it in one transaction with the next event emitted: the engine emits
        an event (a ``running`` status, ``RoundStarted``) before every effect, so nothing held is
        ever behind an effect."""
        ...

    async def is_cancelled(self) -> bool:
        """True once the user asked to stop this run (R-RUN-4)."""
        ...

    # Optional: ``async def ask_link(self, request: LinkRequest, timeout: float) -> LinkAnswer``
    # shows a tool server's link to the user and waits up to ``timeout`` seconds for them to open
    # or decline it ("cancel" when no answer came; ``request.wait`` False: show it, return at once).
    # A sink without it declines every link.
    #
    # Optional: ``async def stop_reason(self) -> str | None``, asked before every model round after
    # the first: a reason (a budget used up) fails the run with that message instead of sending it.


class ListSink:
    """A test double: keeps every event in order; cancellation set by hand; links answered with
    ``link_answer`` (and recorded in ``links``)."""

    def __init__(self, link_answer: LinkAnswer = "decline") -> None:
        self.events: list[Event] = []
        self.cancelled = False
        self.link_answer: LinkAnswer = link_answer
        self.links: list[LinkRequest] = []

    async def ask_link(self, request: LinkRequest, timeout: float) -> LinkAnswer:
        self.links.append(request)
        return self.link_answer if request.wait else "cancel"

    async def emit(self, event: Event) -> None:
        self.events.append(event)

    async def is_cancelled(self) -> bool:
        return self.cancelled

    def of_type(self, kind: type) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]
