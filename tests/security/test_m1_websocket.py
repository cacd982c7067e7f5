"""Issue 16 M1 at the socket itself: a staff user without a grant cannot open another user's
conversation websocket (closed 4403 at the handshake); the owner and an auditor can. The HTTP side is
in test_access_and_secrets.py; this is the consumer, not only the function it asks."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model

from chatapp.routing import websocket_urlpatterns
from tests.audit.conftest import make_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_memory_channel_layer")]
APP = URLRouter(websocket_urlpatterns)


async def _open(user, conversation_id: int) -> tuple[bool, int | None]:
    communicator = WebsocketCommunicator(APP, f"/ws/conversations/{conversation_id}/")
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    await communicator.disconnect()
    return connected, code


async def test_staff_without_a_grant_cannot_open_another_users_conversation_socket(cast):
    run = await sync_to_async(make_run)(cast["alice"], text="private")
    staffer = await sync_to_async(get_user_model().objects.create_user)("staffer-ws", is_staff=True)
    assert await _open(staffer, run.conversation_id) == (False, 4403)
    assert await _open(cast["bob"], run.conversation_id) == (False, 4403)
    assert (await _open(cast["alice"], run.conversation_id))[0]  # the owner
    assert (await _open(cast["otto"], run.conversation_id))[0]  # an auditor


# --- an open socket is not a standing permission -----------------------------------------------------


async def _closed_with(communicator, code: int) -> bool:
    """The next output is the close (nothing else was sent before it)."""
    out = await communicator.receive_output(timeout=5)
    return out == {"type": "websocket.close", "code": code}


async def _granted_reader_socket(cast, username: str):
    """A run of alice's, a user who sees it only through the view_conversation grant, and that
    user's socket on its conversation, connected."""
    from django.contrib.auth.models import Permission

    run = await sync_to_async(make_run)(cast["alice"], text="private")
    reader = await sync_to_async(get_user_model().objects.create_user)(username)
    grant = await Permission.objects.aget(codename="view_conversation", content_type__app_label="chatapp")
    await reader.user_permissions.aadd(grant)
    communicator = WebsocketCommunicator(APP, f"/ws/conversations/{run.conversation_id}/")
    communicator.scope["user"] = await get_user_model().objects.aget(pk=reader.pk)
    assert (await communicator.connect())[0]
    return run, reader, grant, communicator


async def test_a_grant_taken_away_closes_the_socket_before_the_next_replay(cast):
    run, reader, grant, communicator = await _granted_reader_socket(cast, "reader-ws")
    await communicator.send_json_to({"resume": {str(run.pk): 0}, "since_run": run.pk})
    replayed = await communicator.receive_json_from(timeout=5)
    assert replayed["run"] == run.pk  # while the grant holds, the stored frames come
    while (await communicator.receive_json_from(timeout=5))["type"] != "replay_done":
        pass
    await reader.user_permissions.aremove(grant)
    await communicator.send_json_to({"resume": {str(run.pk): 0}, "since_run": run.pk})
    assert await _closed_with(communicator, 4403)
    await communicator.wait()


async def test_live_frames_stop_once_the_user_is_deactivated(cast, monkeypatch):
    from channels.layers import get_channel_layer

    from chatapp import consumers, frames

    run = await sync_to_async(make_run)(cast["alice"], text="private")
    communicator = WebsocketCommunicator(APP, f"/ws/conversations/{run.conversation_id}/")
    communicator.scope["user"] = cast["alice"]
    assert (await communicator.connect())[0]
    layer = get_channel_layer()
    group = frames.group(run.conversation_id)
    await layer.group_send(group, {"type": "run.frame", "text": '{"n": 1}'})
    assert await communicator.receive_from(timeout=5) == '{"n": 1}'
    await get_user_model().objects.filter(pk=cast["alice"].pk).aupdate(is_active=False)
    monkeypatch.setattr(consumers, "ACCESS_RECHECK_SECONDS", 0.0)
    await layer.group_send(group, {"type": "run.frame", "text": '{"n": 2}'})
    assert await _closed_with(communicator, 4403)  # frame 2 never reached the socket
    await communicator.wait()


async def test_signing_out_closes_the_socket_of_that_session(cast):
    from channels.auth import AuthMiddlewareStack
    from django.conf import settings
    from django.test import Client

    run = await sync_to_async(make_run)(cast["alice"], text="private")
    browser = Client()
    await sync_to_async(browser.force_login)(cast["alice"])
    cookie = f"{settings.SESSION_COOKIE_NAME}={browser.cookies[settings.SESSION_COOKIE_NAME].value}"
    communicator = WebsocketCommunicator(
        AuthMiddlewareStack(APP),
        f"/ws/conversations/{run.conversation_id}/",
        headers=[(b"cookie", cookie.encode())],
    )
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"resume": {}, "since_run": None})
    assert (await communicator.receive_json_from(timeout=5))["type"] == "replay_done"  # signed in: served
    await sync_to_async(browser.logout)()  # another tab signs out: the session is gone
    await communicator.send_json_to({"resume": {str(run.pk): 0}, "since_run": run.pk})
    assert await _closed_with(communicator, 4403)
    await communicator.wait()


async def test_frames_held_for_the_first_resume_are_dropped_once_the_grant_is_gone(cast, monkeypatch):
    """A new socket holds live frames until its first replay (session 19): a grant taken away meanwhile
    closes it, and the held frames never go out, not even after the close."""
    import asyncio

    from channels.layers import get_channel_layer

    from chatapp import consumers, frames

    monkeypatch.setattr(consumers, "FIRST_MESSAGE_WAIT", 30.0)
    forwarded, forward = asyncio.Event(), consumers.ConversationConsumer._forward

    async def noting_forward(self, text):
        await forward(self, text)
        forwarded.set()

    monkeypatch.setattr(consumers.ConversationConsumer, "_forward", noting_forward)
    run, reader, grant, communicator = await _granted_reader_socket(cast, "held-ws")
    await get_channel_layer().group_send(
        frames.group(run.conversation_id), {"type": "run.frame", "text": '{"n": 1}'}
    )
    await asyncio.wait_for(forwarded.wait(), 5)  # held: the client has not asked for anything yet
    await reader.user_permissions.aremove(grant)
    await communicator.send_json_to({"resume": {str(run.pk): 0}, "since_run": run.pk})
    assert await _closed_with(communicator, 4403)
    assert await communicator.receive_nothing(timeout=0.5)  # the held frame was dropped
    await communicator.wait()
