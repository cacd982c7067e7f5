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
from tests.web.asgi_calls import call, scope_for

pytestmark = pytest.mark.django_db(transaction=True)


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
    answer = await call(handler, scope_for("/login/"))
    monkeypatch.undo()
    assert answer.status == 200 and b"password" in answer.body
    # request_started, the chain, the view, rendering and request_finished in one hop. Django's own
    # handler crossed 6 times with a sync-only last middleware, 20 without.
    assert crossings == ["OneHopASGIHandler._respond"], crossings


async def test_requests_reuse_a_thread_and_every_signal_fires_in_the_requests_thread():
    handler = OneHopASGIHandler()
    with Threads() as seen:
        for _ in range(5):
            assert (await call(handler, scope_for("/login/"))).status == 200
    assert seen.started == seen.finished  # each request's start and end in one thread
    assert len(set(seen.started)) == 1, seen.started  # and one thread for all five, not five threads
    assert seen.started[0] != threading.get_ident()  # not the event loop's
    assert handler.threads.idle == 1


async def meeting(handler: OneHopASGIHandler, count: int) -> list[int | None]:
    """``count`` requests at once, each waiting inside its thread until all have started: on fewer
    threads than requests they never meet (the barrier times out and the requests fail)."""
    barrier = threading.Barrier(count, timeout=10)

    def meet(**_kwargs) -> None:
        barrier.wait()

    request_started.connect(meet, weak=False)
    try:
        answers = await asyncio.gather(*(call(handler, scope_for("/login/")) for _ in range(count)))
    finally:
        request_started.disconnect(meet)
    return [answer.status for answer in answers]


async def test_simultaneous_requests_run_in_threads_of_their_own():
    handler = OneHopASGIHandler()
    assert await meeting(handler, 2) == [200, 200]
    assert handler.threads.idle == 2


async def test_threads_past_the_idle_limit_end_after_a_burst():
    handler = OneHopASGIHandler(RequestThreads(keep=1))
    assert await meeting(handler, 3) == [200, 200, 200]
    assert handler.threads.idle == 1


async def test_static_files_the_async_api_and_a_bad_request_answer():
    handler = OneHopASGIHandler()
    static = await call(handler, scope_for("/static/js/chat.js"))
    assert static.status == 200 and b"javascript" in static.headers[b"Content-Type"]
    # The OpenAI-compatible endpoint is an async view (async_to_sync from the request's thread).
    json_body = [(b"content-type", b"application/json"), (b"content-length", b"2")]
    api = await call(handler, scope_for("/v1/chat/completions", "POST", json_body), b"{}")
    assert api.status == 401, api.body
    bad = scope_for("/login/")
    bad["headers"] = [(b"host", b"not allowed host")]
    assert (await call(handler, bad)).status == 400


async def test_a_streamed_body_is_closed_in_the_requests_thread_after_its_last_byte(cast_async):
    alice, convo = cast_async
    client = Client()
    await asyncio.to_thread(client.force_login, alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    handler = OneHopASGIHandler()
    with Threads() as seen:
        answer = await call(handler, scope_for(f"/c/{convo.pk}/files.zip", headers=[(b"cookie", cookie)]))
    assert answer.status == 200 and answer.headers[b"Content-Type"] == b"application/zip"
    assert answer.body[:2] == b"PK"
    assert seen.started == seen.finished and len(seen.finished) == 1


async def test_a_client_that_disconnects_ends_a_streamed_response(cast_async):
    # A run's event stream (SSE) follows the run until it ends; a client that goes away must end it,
    # and the response is still closed in the request's thread.
    alice, convo = cast_async
    run = await Run.objects.acreate(conversation=convo, provider_name="p", model="m", status="running")
    key = await asyncio.to_thread(create_key, alice, "sse", "chat")
    scope = scope_for(f"/api/runs/{run.pk}/events", headers=[(b"authorization", f"Bearer {key.secret}".encode())])
    gone = asyncio.Event()
    handler = OneHopASGIHandler()
    with Threads() as seen:
        # The client leaves once the stream has begun; without the disconnect this never returns.
        answer = await asyncio.wait_for(call(handler, scope, on_first_piece=gone.set, leave=gone), timeout=20)
    assert answer.body.startswith(b"retry:")
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
