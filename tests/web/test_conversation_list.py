"""The conversation list: a conversation appears with its first message, its title follows live, and a
delete is confirmed, soft, undoable for a while and recorded; auditors keep everything."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from chatapp.models import AuditEvent, Conversation, Run


@pytest.fixture
def alice(cast):
    client = Client()
    client.force_login(cast["alice"])
    return client


def test_new_conversation_clicks_make_no_empty_rows(alice, cast):
    first = alice.post("/c/new/")
    second = alice.post("/c/new/")
    assert first["Location"] == second["Location"]  # the same draft, not a second row
    assert Conversation.objects.filter(owner=cast["alice"]).count() == 1
    home = alice.get("/").content.decode()
    assert "No conversations yet" in home and "New conversation</a>" not in home  # drafts are not listed


def test_the_first_message_lists_the_conversation_and_names_it_live(alice, cast):
    draft = alice.post("/c/new/")["Location"]
    convo = Conversation.objects.get(owner=cast["alice"])
    response = alice.post(f"{draft}send/", {"message": "Quarterly sales by region\nmore"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    # Out-of-band swaps: the sidebar and the title input change without a reload.
    assert 'id="conversation-list" class="conversations" hx-swap-oob="true"' in html
    assert f'<a href="/c/{convo.pk}/">Quarterly sales by region</a>' in html
    assert 'id="title-input" value="Quarterly sales by region"' in html
    assert alice.post("/c/new/")["Location"] != draft  # now a new draft is handed out


def test_search_without_a_match_says_so(alice):
    html = alice.get("/?q=nothing-like-this&partial=list", HTTP_HX_REQUEST="true").content.decode()
    assert "No conversation matches" in html


def started(alice, cast) -> Conversation:
    draft = alice.post("/c/new/")["Location"]
    alice.post(f"{draft}send/", {"message": "keep me"}, HTTP_HX_REQUEST="true")
    return Conversation.objects.get(owner=cast["alice"])


def test_delete_is_soft_recorded_and_undoable(alice, cast):
    convo = started(alice, cast)
    page = alice.get(f"/c/{convo.pk}/").content.decode()
    assert "hx-confirm=" in page and "You can undo this" in page
    response = alice.post(f"/c/{convo.pk}/delete/", HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and response["HX-Redirect"] == f"/?deleted={convo.pk}"
    assert alice.get(f"/c/{convo.pk}/").status_code == 404
    home = alice.get(f"/?deleted={convo.pk}").content.decode()
    assert "Deleted “keep me”" in home and f"/c/{convo.pk}/restore/" in home
    assert "keep me</a>" not in home
    assert Run.objects.filter(conversation=convo).exists()  # nothing is removed
    otto = Client()
    otto.force_login(cast["otto"])
    run = Run.objects.get(conversation=convo)
    assert otto.get(f"/audit/runs/{run.pk}/").status_code == 200  # auditors keep everything
    assert alice.post(f"/c/{convo.pk}/restore/").status_code == 302
    assert "keep me</a>" in alice.get("/").content.decode()
    kinds = list(AuditEvent.objects.filter(kind__startswith="conversation_").values_list("kind", flat=True))
    assert kinds == ["conversation_deleted", "conversation_restored"]


def test_undo_has_a_time_limit_and_is_the_owners(alice, cast, settings):
    convo = started(alice, cast)
    alice.post(f"/c/{convo.pk}/delete/")
    bob = Client()
    bob.force_login(cast["bob"])
    assert bob.post(f"/c/{convo.pk}/restore/").status_code == 410
    Conversation.objects.filter(pk=convo.pk).update(deleted_at=timezone.now() - timedelta(seconds=601))
    response = alice.post(f"/c/{convo.pk}/restore/")
    assert response.status_code == 410 and "too late" in response.content.decode()
    assert Conversation.objects.get(pk=convo.pk).deleted_at is not None


def test_a_deleted_conversation_takes_no_messages(alice, cast):
    convo = started(alice, cast)
    alice.post(f"/c/{convo.pk}/delete/")
    assert alice.post(f"/c/{convo.pk}/send/", {"message": "x"}).status_code == 404
    assert alice.get(f"/c/{convo.pk}/files/").status_code == 404


def test_a_send_re_renders_the_list_only_when_it_changes(alice, cast):
    older = started(alice, cast)
    draft = alice.post("/c/new/")["Location"]
    newer_html = alice.post(f"{draft}send/", {"message": "the newer one"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="conversation-list"' in newer_html  # a new conversation: listed, named, on top
    newer = Conversation.objects.get(owner=cast["alice"], title="the newer one")
    Run.objects.filter(conversation__owner=cast["alice"]).update(status="succeeded")
    Conversation.objects.filter(owner=cast["alice"]).update(active_run=None)
    # Already on top, same title: nothing in the list changes, so it is not sent again.
    same = alice.post(f"/c/{newer.pk}/send/", {"message": "again"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="conversation-list"' not in same and 'id="title-input"' in same
    # The older one moves to the top: the list comes with it, in its new order.
    Run.objects.filter(conversation__owner=cast["alice"]).update(status="succeeded")
    Conversation.objects.filter(owner=cast["alice"]).update(active_run=None)
    moved = alice.post(f"/c/{older.pk}/send/", {"message": "back to this"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="conversation-list"' in moved
    assert moved.index(f'href="/c/{older.pk}/"') < moved.index(f'href="/c/{newer.pk}/"')
