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
