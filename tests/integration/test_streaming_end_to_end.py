"""One message through the real topology: HTTP → daphne → Celery worker → demo model → websocket."""

from __future__ import annotations

import asyncio

import pytest
import websockets

from chatapp.models import Conversation, Message, Run
from tests.integration.client import LiveClient, frames_until, session_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_tokens_stream_as_separate_frames_before_the_final_message(cast, demo_provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"])
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))

    async def scenario():
        async with client.ws(convo.pk) as ws:
            await ws.send('{"resume": {}}')
            response = await asyncio.to_thread(client.send, convo.pk, "Tell me about clearloop")
            assert response.status_code == 200, response.text
            return await asyncio.wait_for(
                frames_until(ws, lambda f: f["type"] in ("run_finished", "run_failed")), 60
            )

    frames = asyncio.run(scenario())
    deltas = [f for f in frames if f["type"] == "delta" and f["data"]["text"]]
    assert frames[-1]["type"] == "run_finished", frames[-1]
    assert len(deltas) >= 10
    seqs = [f["seq"] for f in frames if f.get("seq")]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
    streamed = "".join(f["data"]["text"] for f in deltas)
    # Deltas are coalesced (one frame per ~30 ms per run), never one message per token.
    assert len(deltas) < len(streamed.split())
    run = Run.objects.get(conversation=convo)
    assert run.status == "succeeded"
    assert run.final_text == streamed == frames[-1]["data"]["text"]
    assert "Tell me about clearloop" in run.final_text
    stored = Message.objects.get(conversation=convo, role="assistant")
    assert stored.content == streamed


def test_another_users_websocket_is_refused(cast, demo_provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"])
    intruder = LiveClient(live_stack.base_url, session_for(cast["bob"]))

    async def attempt():
        async with intruder.ws(convo.pk) as ws:
            await ws.recv()

    with pytest.raises((websockets.InvalidStatus, websockets.ConnectionClosed)) as caught:
        asyncio.run(attempt())
    if isinstance(caught.value, websockets.InvalidStatus):
        assert caught.value.response.status_code == 403


def test_anonymous_websocket_is_refused(cast, demo_provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"])
    anonymous = LiveClient(live_stack.base_url, "not-a-session")

    async def attempt():
        async with anonymous.ws(convo.pk) as ws:
            await ws.recv()

    with pytest.raises((websockets.InvalidStatus, websockets.ConnectionClosed)):
        asyncio.run(attempt())


def test_unreachable_model_fails_the_run_with_a_reason_and_keeps_the_message(cast, demo_provider, live_stack):
    from chatapp.models import ProviderConfig

    dead = ProviderConfig.objects.create(
        name="dead", base_url="http://127.0.0.1:9/v1", model="x", preset="demo"
    )
    convo = Conversation.objects.create(owner=cast["alice"], provider=dead)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))

    async def scenario():
        async with client.ws(convo.pk) as ws:
            await ws.send('{"resume": {}}')
            await asyncio.to_thread(client.send, convo.pk, "are you there?")
            return await asyncio.wait_for(
                frames_until(ws, lambda f: f["type"] in ("run_finished", "run_failed")), 90
            )

    frames = asyncio.run(scenario())
    assert frames[-1]["type"] == "run_failed"
    run = Run.objects.get(conversation=convo)
    assert run.status == "failed" and run.error
    assert Message.objects.filter(conversation=convo, role="user", content="are you there?").exists()
    page = client.http.get(f"/runs/{run.pk}/fragment/")
    # In words with the next step for the person; the technical class in the trace.
    assert "The model server at 127.0.0.1:9 refused the connection" in page.text
    assert "check the provider &#x27;dead&#x27; in the admin" in page.text
    assert f"Failed with <code>{run.error_class}: " in page.text
