"""Django's middleware chain in one thread under ASGI, instead of a thread hop per middleware.

Django runs each middleware in the mode of the one below it (``BaseHandler.load_middleware``). Below
WhiteNoise (sync-only) every middleware here is async-capable, so that part of the chain ran on the
event loop, where each ``MiddlewareMixin`` (sessions, locale, common, CSRF, auth, messages,
clickjacking, CSP) calls its ``process_request`` and ``process_response`` through ``sync_to_async``
(``django/utils/deprecation.py``): 20 thread crossings on every page request in all, counted with
the view's own (``tests/web/test_one_thread_chain.py``; 6 now). This middleware is sync-only and
last, so the whole chain is sync:
Django crosses into one thread at the top and runs every middleware and the view there
(docs/performance.md, session 8: the stack's floor for a send). An async view still works: Django
runs it with ``async_to_sync`` from that thread, and streamed responses are sent by the ASGI handler.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class OneThreadChain:
    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)
