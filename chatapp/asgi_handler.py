"""Django's ASGI handler with a request's synchronous part in one thread hop, on a reused thread.

Django's own ``ASGIHandler`` spent about 2 ms of CPU per request on this machine beyond what the same
request costs under WSGI (docs/performance.md, session 21), in two ways:

- **Thread crossings.** It fires ``request_started`` (a sync receiver: a hop), runs the middleware
  chain (sync here: a hop), and below the chain Django's async ``_get_response_async`` comes back to
  the event loop (``async_to_sync``) only to send the sync view into the thread again; closing the
  response is one more hop. Each crossing is a future, a wake-up of the loop through its self-pipe
  and a context copy. Here the chain is built sync down to the view (``load_middleware(is_async=False)``,
  as under WSGI), and ``request_started``, the request, the chain, the view and, unless the response
  streams, its closing (``request_finished``: the thread's database connection back to the pool) run
  in **one** hop.
- **A new thread per request.** Django enters asgiref's ``ThreadSensitiveContext`` per request, which
  creates a one-thread executor for it and, on exit, starts another thread to join it. Here each
  request borrows a one-thread executor from a free list (asgiref's ``executor=`` argument: the caller
  owns it, nothing is shut down) and gives it back when the response is sent.

Everything Django's handler guarantees holds: one thread runs the whole request (a queryset's cursor
and the connection stay in the thread that opened them, ``thread_sensitive`` code in a streamed body
still runs there, ``chatapp/streaming.py``), a client that disconnects cancels the response, an async
view still works (``async_to_sync`` from the request's thread, as Django does under WSGI), and a
streamed response is closed in the request's thread after its last byte.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.db import connections
from django.http import FileResponse, HttpResponseBase
from django.urls import set_script_prefix

# Idle request threads kept for reuse; a burst above this creates threads (as Django does for every
# request) and lets the surplus end once it has passed.
IDLE_THREADS = 64


class _Processed(Exception):
    """Ends the task group once the response is sent (Django's handler does the same)."""


class RequestThreads:
    """One-thread executors lent to requests, one request at a time each."""

    def __init__(self, keep: int = IDLE_THREADS) -> None:
        self._idle: list[ThreadPoolExecutor] = []
        self._keep = keep
        self._lock = threading.Lock()

    def borrow(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(executor)
                return
        # Surplus after a burst: the thread closes its own database connections (they live in it),
        # then ends; nothing waits for it.
        executor.submit(connections.close_all)
        executor.shutdown(wait=False)

    @property
    def idle(self) -> int:
        return len(self._idle)


class OneHopASGIHandler(ASGIHandler):
    def __init__(self, threads: RequestThreads | None = None) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)  # the chain sync down to the view, as under WSGI
        self.threads = threads or RequestThreads()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.borrow()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self.threads.give_back(executor)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        with closing(body_file):
            response: HttpResponseBase | None = None
            try:
                try:
                    async with asyncio.TaskGroup() as group:
                        group.create_task(self.listen_for_disconnect(receive))
                        response = await sync_to_async(self._respond)(scope, body_file)
                        await self.send_response(response, send)
                        raise _Processed
                except* (_Processed, RequestAborted):
                    pass
            except BaseExceptionGroup as group_error:
                # The server logs the error itself, not a group around it (as Django's handler).
                if len(group_error.exceptions) == 1:
                    raise group_error.exceptions[0] from None
                raise
            if response is None:
                # Disconnected before there was a response: what Django's handler does then.
                await signals.request_finished.asend(sender=self.__class__)
            elif not response.closed:
                await sync_to_async(response.close)()  # a streamed body, after its last byte

    def _respond(self, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        """In the request's thread: the whole synchronous part of a request."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__  # type: ignore[attr-defined]  # Django's own
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        assert response is not None
        if not response.streaming:
            # The body is in memory: close now, in this thread, so request_finished hands this
            # thread's database connection back before the bytes are even sent.
            response.close()
        return response
