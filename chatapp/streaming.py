"""Responses that are sent while they are produced, under ASGI (daphne) as under WSGI.

Django serves a *synchronous* iterator under ASGI by first collecting all of it into a list
(``StreamingHttpResponse.__aiter__``: "must consume synchronous iterators"), so a zip of the whole
workspace, or a 25 MB download, was built in daphne's memory before its first byte left. Here the
iterator is handed to Django as an *asynchronous* one that takes each piece from the synchronous
producer in a worker thread, so every piece is sent as soon as it exists. Under WSGI (the test
client) the synchronous iterator is kept, which Django streams as it is.

Producers that read files only run outside Django's thread for synchronous code
(``thread_sensitive=False``) and never hold up other requests; one that reads the database (the
auditors' JSONL export) takes each piece in the request's own thread (``database=True``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpRequest, StreamingHttpResponse


def _next(source: Iterator[bytes]) -> bytes | None:
    return next(source, None)


async def pieces(source: Iterator[bytes], *, database: bool = False) -> AsyncIterator[bytes]:
    """Each piece of ``source`` as soon as it is produced; closing this closes ``source``.

    ``database``: the producer reads the database (a queryset's cursor belongs to the connection of
    the thread that opened it), so every piece is taken in the request's own thread for synchronous
    code (``thread_sensitive=True``), where its connection lives."""
    take = sync_to_async(_next, thread_sensitive=database)
    try:
        while (piece := await take(source)) is not None:
            if piece:
                yield piece
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=database)()


def is_asgi(request: HttpRequest) -> bool:
    return isinstance(request, ASGIRequest)


def streaming_response(
    request: HttpRequest, source: Iterator[bytes], *, database: bool = False, **kwargs: Any
) -> StreamingHttpResponse:
    content: Iterator[bytes] | AsyncIterator[bytes] = (
        pieces(source, database=database) if is_asgi(request) else source
    )
    return StreamingHttpResponse(content, **kwargs)


class StreamedFileResponse(FileResponse):
    """A ``FileResponse`` (its headers: length, type, disposition) whose body is read piece by piece
    as it is sent under ASGI too, instead of being read whole into a list first."""

    block_size = 64 * 1024

    def __init__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        self._asgi = is_asgi(request)
        super().__init__(*args, **kwargs)

    def _set_streaming_content(self, value: Any) -> None:
        base: Any = super()  # Django's private hook, not in the type stubs
        base._set_streaming_content(value)
        this: Any = self
        if self._asgi and not this.is_async:
            this._iterator = pieces(this._iterator)
            this.is_async = True
