"""The one SSE reader for every provider (providers.md §7.1), on top of httpx-sse.

httpx-sse already splits on ``\\n``, ``\\r\\n`` and ``\\r``, joins multi-line ``data:``, ignores
``:`` comments and tracks ``event:``. Two things it does not do, added here without touching its
internals:

* a final frame without the blank line after it (or without any newline at all) is dropped by the
  SSE spec's EOF rule, but real streams end that way (``anthropic_stream_max_tokens_mid_tool_input``
  ends on ``data: {"type":"message_stop" }`` with no newline): we feed one blank line at EOF, which
  dispatches a pending frame and is a no-op otherwise;
* a total deadline: the idle timeout is httpx's read timeout (it bounds every socket read, i.e. "no
  bytes for N s"); the total one is checked here on every piece of text, so a server trickling
  bytes forever is stopped as well.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
from httpx_sse import EventSource, ServerSentEvent

from agent.providers.errors import StalledStream


class _TerminatedText:
    """Looks like the part of ``httpx.Response`` that ``EventSource`` reads, plus an EOF blank line."""

    def __init__(self, response: httpx.Response, deadline: float | None) -> None:
        self._response = response
        self._deadline = deadline
        self.headers = response.headers

    async def aiter_text(self) -> AsyncIterator[str]:
        deadline = self._deadline
        async for text in self._response.aiter_text():
            if deadline is not None and time.monotonic() > deadline:
                # Not retried (StalledStream): the provider was answering, and billing, all along.
                raise StalledStream(
                    "timed out: the response took longer than the total timeout (not retried: the "
                    "provider may have billed it; raise the provider's total timeout for longer answers)"
                )
            yield text
        yield "\n\n"


def is_event_stream(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def iter_sse(response: httpx.Response, *, deadline: float | None = None) -> AsyncIterator[ServerSentEvent]:
    """The events of ``response`` (a ``text/event-stream``), the last frame included.

    ``deadline`` is a ``time.monotonic()`` value after which the stream is abandoned. Returned
    directly rather than re-yielded: one generator layer less per event on the hot path.
    """
    return EventSource(_TerminatedText(response, deadline)).aiter_sse()  # type: ignore[arg-type]
