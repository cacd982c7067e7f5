"""Sending: validation with a visible reason, the user's message never lost, ownership enforced."""

from __future__ import annotations

import pytest
from django.test import Client

from chatapp.models import Conversation, Message, Run


@pytest.fixture
def alice_client(cast):
    client = Client(enforce_csrf_checks=False)
    client.force_login(cast["alice"])
    return client


@pytest.fixture
def convo(cast):
    return Conversation.objects.create(owner=cast["alice"])


def test_it_refuses_an_empty_message_with_a_reason(alice_client, convo):
    response = alice_client.post(f"/c/{convo.pk}/send/", {"message": "   "}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    assert "empty" in response.content.decode()
    assert not Run.objects.exists()


def test_it_refuses_an_oversized_message_with_the_limit(alice_client, convo, settings):
    settings.MAX_MESSAGE_BYTES = 1000
    response = alice_client.post(f"/c/{convo.pk}/send/", {"message": "x" * 1001}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    assert "1,000 bytes" in response.content.decode()


def test_a_valid_message_is_stored_with_a_queued_run(alice_client, convo, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = alice_client.post(f"/c/{convo.pk}/send/", {"message": "hi there"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    run = Run.objects.get(conversation=convo)
    assert run.status == "queued" and run.provider_name == "demo"
    assert Message.objects.get(conversation=convo, role="user").content == "hi there"
    assert len(callbacks) == 1  # the task is enqueued only once the rows are committed
    assert f'id="run-{run.pk}"' in response.content.decode()


def test_a_second_message_while_a_run_is_active_is_refused_and_says_why(
    alice_client, convo, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        alice_client.post(f"/c/{convo.pk}/send/", {"message": "first"})
        response = alice_client.post(f"/c/{convo.pk}/send/", {"message": "second"})
    assert response.status_code == 409  # as for regenerate and edit; shown in place all the same
    assert response["HX-Retarget"] == "#send-error"
    assert "still answering" in response.content.decode()
    assert Run.objects.filter(conversation=convo).count() == 1


@pytest.mark.parametrize("path", ["/c/{id}/", "/c/{id}/send/", "/c/{id}/rename/", "/c/{id}/delete/"])
def test_it_rejects_foreign_conversation(cast, convo, path):
    client = Client()
    client.force_login(cast["bob"])
    url = path.format(id=convo.pk)
    response = (
        client.post(url, {"message": "x", "title": "x"})
        if not url.endswith(f"{convo.pk}/")
        else client.get(url)
    )
    assert response.status_code == 404
    assert Conversation.objects.filter(pk=convo.pk, title="New conversation").exists()


def test_trace_api_is_404_for_other_users_and_visible_to_the_owner_and_auditors(cast, convo):
    run = Run.objects.create(conversation=convo, provider_name="demo", model="m")
    for name, expected in (("bob", 404), ("alice", 200), ("otto", 200), ("ada", 200)):
        client = Client()
        client.force_login(cast[name])
        assert client.get(f"/api/runs/{run.pk}/trace").status_code == expected, name


def test_anonymous_users_are_sent_to_login(convo):
    response = Client().get(f"/c/{convo.pk}/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_posts_without_a_csrf_token_are_refused(cast, convo):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast["alice"])
    assert client.post(f"/c/{convo.pk}/send/", {"message": "hi"}).status_code == 403


@pytest.mark.parametrize(
    "path", ["/c/new/", "/c/{id}/send/", "/c/{id}/rename/", "/c/{id}/delete/", "/c/{id}/settings/"]
)
def test_auditors_cannot_write_even_in_their_own_conversation(cast, path):
    own = Conversation.objects.create(owner=cast["otto"])
    client = Client()
    client.force_login(cast["otto"])
    response = client.post(path.format(id=own.pk), {"message": "hi", "title": "x"})
    assert response.status_code == 403
    assert Conversation.objects.filter(owner=cast["otto"]).count() == 1
    assert not Run.objects.exists()


def test_auditors_land_on_the_trace_browser(cast):
    client = Client()
    client.force_login(cast["otto"])
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/audit/")


@pytest.mark.parametrize(("who", "expected"), [("otto", 403), ("alice", 404)])
def test_a_missing_conversation_refuses_an_auditor_before_saying_it_is_missing(cast, who, expected):
    client = Client()
    client.force_login(cast[who])
    assert client.post("/c/999999/send/", {"message": "hi"}).status_code == expected
    assert not Run.objects.exists()


def test_whether_the_writer_audits_is_asked_in_the_conversation_s_own_read(cast):
    """Session 15: one statement, not two, on every write (the send reads the provider with it too)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from chatapp.access import owned_conversation_or_404

    own = Conversation.objects.create(owner=cast["alice"])
    user = type(cast["alice"]).objects.get(pk=cast["alice"].pk)  # a fresh object: nothing remembered
    with CaptureQueriesContext(connection) as queries:
        found = owned_conversation_or_404(user, own.pk, related=("provider",))
        found.provider  # noqa: B018 - read with the conversation: no statement of its own
    assert found.pk == own.pk and len(queries.captured_queries) == 1, queries.captured_queries
    assert "auth_group" in queries.captured_queries[0]["sql"]
