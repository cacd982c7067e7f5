"""Under ASGI the middleware chain runs in one thread (one crossing at the top), not with a
``sync_to_async`` per middleware: a ``MiddlewareMixin`` on the event loop crosses twice per request
(``process_request`` and ``process_response``). Pages, the JSON API's async view and static files
still answer through ASGI."""

from __future__ import annotations

import pytest
from asgiref.sync import SyncToAsync
from django.test import AsyncClient

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_request_crosses_into_a_thread_a_few_times_not_once_per_middleware(monkeypatch):
    crossings = []
    call = SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        crossings.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await call(self, *args, **kwargs)

    client = AsyncClient()
    await client.get("/login/")  # warm: the first request also builds the URL resolver
    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    response = await client.get("/login/")
    monkeypatch.undo()
    assert response.status_code == 200
    # The request_started signal's receivers, the chain (once), and below it Django's own async
    # request handling (process_view, the view, rendering) and closing the response: 6. With a
    # crossing per middleware there were 20 (every MiddlewareMixin's process_request and
    # process_response).
    assert len(crossings) <= 6, crossings


async def test_pages_static_files_and_the_async_api_answer_through_asgi():
    client = AsyncClient()
    login = await client.get("/login/")
    assert login.status_code == 200 and b"password" in login.content
    static = await client.get("/static/js/chat.js")
    assert static.status_code == 200 and "javascript" in static["Content-Type"]
    # The OpenAI-compatible endpoint is an async view (run with async_to_sync from the chain's thread).
    api = await client.post("/v1/chat/completions", data={}, content_type="application/json")
    assert api.status_code == 401, api.content
