"""The app's ASGI handler (chatapp/asgi_handler.py): a request's synchronous part in one thread hop,
on a thread reused from one request to the next, with Django's guarantees kept (one thread per
request, streamed bodies closed in it, async views, a disconnect ends the response)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import SyncToAsync
from django.core.signals import request_finished, request_started
from django.test import Client

from chatapp.asgi_handler import OneHopASGIHandler, RequestThreads
from chatapp.models import Conversation, Run
from chatapp.services.api_keys import create_key
from chatapp.workspaces import workspace_path

pytestmark = pytest.mark.django_db(transaction=True)


def scope_for(path: str, method: str = "GET", cookie: bytes = b"", body: bytes = b"") -> dict:
    headers = [(b"host", b"testserver")]
    if cookie:
        headers.append((b"cookie", cookie))
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }


async def call(handler, scope: dict, body: bytes = b"", disconnect: asyncio.Event | None = None):
    """One request through ``handler``; returns (status, headers, body)."""
    sent_body = False
    start: dict = {}
    pieces: list[bytes] = []

    async def receive():
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await (disconnect or asyncio.Event()).wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)
        elif message.get("body"):
            pieces.append(message["body"])

    await handler(scope, receive, send)
    return start.get("status"), dict(start.get("headers", [])), b"".join(pieces)


class Threads:
    """The thread each request_started / request_finished fired in."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.finished: list[int] = []

    def on_started(self, **_kwargs) -> None:
        self.started.append(threading.get_ident())

    def on_finished(self, **_kwargs) -> None:
        self.finished.append(threading.get_ident())

    def __enter__(self) -> Threads:
        request_started.connect(self.on_started, weak=False)
        request_finished.connect(self.on_finished, weak=False)
        return self

    def __exit__(self, *_exc) -> None:
        request_started.disconnect(self.on_started)
        request_finished.disconnect(self.on_finished)


async def test_a_page_request_crosses_into_a_thread_once(monkeypatch):
    handler = OneHopASGIHandler()
    await call(handler, scope_for("/login/"))  # warm: the first request also builds the URL resolver
    crossings = []
    original = SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        crossings.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    status, _, body = await call(handler, scope_for("/login/"))
    monkeypatch.undo()
    assert status == 200 and b"password" in body
    # request_started, the chain, the view, rendering and request_finished in one hop. Django's own
    # handler crossed 6 times with a sync-only last middleware, 20 without.
    assert crossings == ["OneHopASGIHandler._respond"], crossings


async def test_requests_reuse_a_thread_and_every_signal_fires_in_the_requests_thread():
    handler = OneHopASGIHandler()
    with Threads() as seen:
        for _ in range(5):
            status, _, _ = await call(handler, scope_for("/login/"))
            assert status == 200
    assert seen.started == seen.finished  # each request's start and end in one thread
    assert len(set(seen.started)) == 1, seen.started  # and one thread for all five, not five threads
    assert seen.started[0] != threading.get_ident()  # not the event loop's
    assert handler.threads.idle == 1


async def test_simultaneous_requests_run_in_threads_of_their_own():
    # Both requests wait inside their thread for the other: on one shared thread they never meet.
    handler = OneHopASGIHandler()
    barrier = threading.Barrier(2, timeout=10)

    def meet(**_kwargs) -> None:
        barrier.wait()

    request_started.connect(meet, weak=False)
    try:
        results = await asyncio.gather(*(call(handler, scope_for("/login/")) for _ in range(2)))
    finally:
        request_started.disconnect(meet)
    assert [status for status, _, _ in results] == [200, 200]
    assert handler.threads.idle == 2


async def test_threads_past_the_idle_limit_end_after_a_burst():
    handler = OneHopASGIHandler(RequestThreads(keep=1))
    barrier = threading.Barrier(3, timeout=10)

    def meet(**_kwargs) -> None:
        barrier.wait()

    request_started.connect(meet, weak=False)
    try:
        results = await asyncio.gather(*(call(handler, scope_for("/login/")) for _ in range(3)))
    finally:
        request_started.disconnect(meet)
    assert all(status == 200 for status, _, _ in results)
    assert handler.threads.idle == 1


async def test_static_files_the_async_api_and_a_bad_request_answer():
    handler = OneHopASGIHandler()
    status, headers, _ = await call(handler, scope_for("/static/js/chat.js"))
    assert status == 200 and b"javascript" in headers[b"Content-Type"]
    # The OpenAI-compatible endpoint is an async view (async_to_sync from the request's thread).
    status, _, body = await call(handler, scope_for("/v1/chat/completions", "POST", body=b"{}"), b"{}")
    assert status == 401, body
    bad = scope_for("/login/")
    bad["headers"] = [(b"host", b"not allowed host")]
    status, _, _ = await call(handler, bad)
    assert status == 400


async def test_a_streamed_body_is_closed_in_the_requests_thread_after_its_last_byte(cast_async):
    alice, convo = cast_async
    client = Client()
    await asyncio.to_thread(client.force_login, alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    handler = OneHopASGIHandler()
    with Threads() as seen:
        status, headers, body = await call(handler, scope_for(f"/c/{convo.pk}/files.zip", cookie=cookie))
    assert status == 200 and headers[b"Content-Type"] == b"application/zip" and body[:2] == b"PK"
    assert seen.started == seen.finished and len(seen.finished) == 1


async def test_a_client_that_disconnects_ends_a_streamed_response(cast_async):
    # A run's event stream (SSE) follows the run until it ends; a client that goes away must end it,
    # and the response is still closed in the request's thread.
    alice, convo = cast_async
    run = await Run.objects.acreate(conversation=convo, provider_name="p", model="m", status="running")
    key = await asyncio.to_thread(create_key, alice, "sse", "chat")
    scope = scope_for(f"/api/runs/{run.pk}/events")
    scope["headers"].append((b"authorization", f"Bearer {key.secret}".encode()))
    gone = asyncio.Event()
    first: list[bytes] = []

    async def receive_and_leave():
        if not first:
            first.append(b"")
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.body" and message.get("body"):
            first.append(message["body"])
            gone.set()  # the client leaves once the stream has begun

    handler = OneHopASGIHandler()
    with Threads() as seen:
        await asyncio.wait_for(handler(scope, receive_and_leave, send), timeout=20)
    assert b"retry:" in b"".join(first)
    assert seen.started == seen.finished and len(seen.finished) == 1


@pytest.fixture
def cast_async(cast, tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    convo = Conversation.objects.create(owner=cast["alice"], title="asgi")
    folder = workspace_path(convo.owner_id, convo.pk)
    folder.mkdir(parents=True)
    (folder / "notes.md").write_text("# notes\n", encoding="utf-8")
    return cast["alice"], convo


async def test_an_error_outside_the_view_reaches_the_server_as_itself():
    # The server (daphne) logs what escaped and answers 500: the exception, not a group around it.
    handler = OneHopASGIHandler()

    def broken(**_kwargs) -> None:
        raise LookupError("a request_started receiver failed")

    request_started.connect(broken, weak=False)
    try:
        with pytest.raises(LookupError, match="receiver failed"):
            await call(handler, scope_for("/login/"))
    finally:
        request_started.disconnect(broken)
    assert handler.threads.idle == 1  # the thread went back all the same


def test_the_apps_asgi_entry_and_the_floors_serve_django_through_it():
    from bench.floors.asgi import application as floor
    from chatapp.asgi import django_app

    assert isinstance(django_app, OneHopASGIHandler)
    assert isinstance(floor, OneHopASGIHandler)
