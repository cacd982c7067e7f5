"""A policy may ask the user (Allow once / Deny in the chat) instead of an admin; only the
conversation's owner answers, and only for tools whose policy says so."""

from __future__ import annotations

import pytest
from django.test import Client

from chatapp.models import Conversation, Message, Run, ToolCall, ToolPolicy


@pytest.fixture
def waiting(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    question = Message.objects.create(conversation=convo, role="user", content="q", payload={})
    run = Run.objects.create(
        conversation=convo, user_message=question, provider_name="demo", model="m", status="awaiting_approval"
    )
    return ToolCall.objects.create(
        run=run,
        round_index=0,
        index=0,
        call_id="c1",
        name="notes__add",
        arguments='{"text": "hi"}',
        status="awaiting_approval",
        risk="low",
    )


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_owner_allows_once_when_the_policy_asks_the_user(
    cast, waiting, django_capture_on_commit_callbacks
):
    ToolPolicy.objects.create(pattern="notes__*", tier="low", approval="always", approver="user")
    alice = client_for(cast["alice"])
    page = alice.get(f"/c/{waiting.run.conversation_id}/").content.decode()
    assert "asks for your OK" in page and "Allow once" in page
    with django_capture_on_commit_callbacks(execute=False):
        response = alice.post(f"/runs/{waiting.run_id}/calls/{waiting.pk}/allow/")
    assert response.status_code == 204
    waiting.refresh_from_db()
    assert waiting.status == "approved" and waiting.approval.decided_by == cast["alice"]
    assert Run.objects.get(pk=waiting.run_id).status == "queued"


def test_an_admin_policy_cannot_be_answered_in_the_chat(cast, waiting):
    alice = client_for(cast["alice"])
    assert alice.post(f"/runs/{waiting.run_id}/calls/{waiting.pk}/allow/").status_code == 404
    assert "Allow once" not in alice.get(f"/c/{waiting.run.conversation_id}/").content.decode()
    ToolPolicy.objects.create(pattern="notes__add", tier="low", approval="always", approver="user")
    bob = client_for(cast["bob"])
    assert bob.post(f"/runs/{waiting.run_id}/calls/{waiting.pk}/deny/").status_code == 404
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"
