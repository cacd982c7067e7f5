"""The home page is the user's draft conversation, live from the start: its first message is an
ordinary send (no trip to a new page), after which the address becomes the conversation's and the home
page hands out a new draft."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chatapp.models import Conversation, Message, ProviderConfig, Run, Upload


@pytest.fixture
def alice(cast):
    client = Client()
    client.force_login(cast["alice"])
    return client


def draft_of(cast) -> Conversation:
    return Conversation.objects.get(owner=cast["alice"], messages__isnull=True)


def send_from(client, convo: Conversation, address: str, capture, **form):
    """A send from the page at ``address`` (htmx names it), its run left unqueued."""
    with capture(execute=False):
        return client.post(
            f"/c/{convo.pk}/send/",
            form,
            HTTP_HX_REQUEST="true",
            HTTP_HX_CURRENT_URL=f"http://testserver{address}",
        )


def test_the_home_page_is_the_draft_conversation_with_its_socket_and_greeting(alice, cast):
    html = alice.get("/").content.decode()
    draft = draft_of(cast)
    assert f'data-ws-path="/ws/conversations/{draft.pk}/"' in html  # chat.js opens it on load
    assert f'hx-post="/c/{draft.pk}/send/"' in html
    assert 'data-role="welcome"' in html and "<title>clearloop</title>" in html
    assert "No conversations yet" in html  # the draft is not listed
    alice.get("/")
    assert Conversation.objects.filter(owner=cast["alice"]).count() == 1  # the same draft again


def test_the_first_message_from_home_pushes_the_conversations_address_and_names_it(
    alice, cast, django_capture_on_commit_callbacks
):
    alice.get("/")
    draft = draft_of(cast)
    response = send_from(alice, draft, "/", django_capture_on_commit_callbacks, message="Quarterly sales")
    html = response.content.decode()
    assert response.status_code == 200 and response["HX-Push-Url"] == f"/c/{draft.pk}/"
    assert "<title>Quarterly sales · clearloop</title>" in html  # htmx sets the document's title
    assert 'hx-swap-oob="true"' in html and f'<a href="/c/{draft.pk}/">Quarterly sales</a>' in html
    assert Run.objects.get(conversation=draft).status == "queued"
    # Home now hands out a new draft; the started conversation is listed there.
    home = alice.get("/").content.decode()
    assert draft_of(cast).pk != draft.pk and f'<a href="/c/{draft.pk}/">Quarterly sales</a>' in home


def test_a_send_on_the_conversations_own_page_pushes_nothing(alice, cast, django_capture_on_commit_callbacks):
    alice.get("/")
    draft = draft_of(cast)
    response = send_from(alice, draft, f"/c/{draft.pk}/", django_capture_on_commit_callbacks, message="hello")
    assert response.status_code == 200 and "HX-Push-Url" not in response


def test_an_empty_first_message_is_refused_and_the_draft_stays_a_draft(
    alice, cast, django_capture_on_commit_callbacks
):
    alice.get("/")
    draft = draft_of(cast)
    refused = send_from(alice, draft, "/", django_capture_on_commit_callbacks, message="  ")
    assert refused.status_code == 422 and "empty" in refused.content.decode()
    assert "HX-Push-Url" not in refused
    assert not Message.objects.filter(conversation=draft).exists()
    assert 'data-role="welcome"' in alice.get("/").content.decode() and draft_of(cast).pk == draft.pk


def test_a_conversation_with_an_exchange_has_no_greeting(alice, cast, django_capture_on_commit_callbacks):
    alice.get("/")
    draft = draft_of(cast)
    send_from(alice, draft, f"/c/{draft.pk}/", django_capture_on_commit_callbacks, message="hi")
    html = alice.get(f"/c/{draft.pk}/").content.decode()
    assert 'data-role="welcome"' not in html and "<title>hi · clearloop</title>" in html


def test_an_auditor_is_sent_to_the_audit_pages_and_gets_no_draft(cast):
    client = Client()
    client.force_login(cast["otto"])
    assert client.get("/")["Location"] == "/audit/"
    assert not Conversation.objects.filter(owner=cast["otto"]).exists()


def test_a_model_chosen_and_a_file_uploaded_on_the_home_page_go_with_the_first_message(
    alice, cast, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    ProviderConfig.objects.create(
        name="other", label="Other", base_url="http://127.0.0.1:9/v1", model="other-m"
    )
    alice.get("/")
    draft = draft_of(cast)
    chosen = alice.post(f"/c/{draft.pk}/settings/", {"provider": "other"}, HTTP_HX_REQUEST="true")
    assert chosen.status_code == 200 and "Other · other-m" in chosen.content.decode()
    uploaded = alice.post(
        f"/c/{draft.pk}/files/upload/", {"file": [SimpleUploadedFile("notes.csv", b"a,b\n1,2\n")]}
    )
    assert uploaded.status_code == 200
    upload_id = uploaded.json()["files"][0]["id"]
    # The page the user is on is still this draft: its first message goes there, with the file.
    response = send_from(
        alice,
        draft,
        "/",
        django_capture_on_commit_callbacks,
        message="summarise notes.csv",
        attachment=[str(upload_id)],
    )
    assert response.status_code == 200 and response["HX-Push-Url"] == f"/c/{draft.pk}/"
    run = Run.objects.get(conversation=draft)
    assert run.provider_name == "other"
    assert list(Upload.objects.filter(message=run.user_message).values_list("name", flat=True)) == [
        "notes.csv"
    ]


def test_a_first_message_from_a_draft_another_tab_started_starts_its_own_conversation(
    alice, cast, django_capture_on_commit_callbacks
):
    alice.get("/")  # two tabs on the home page: the same draft
    draft = draft_of(cast)
    first = send_from(alice, draft, "/", django_capture_on_commit_callbacks, message="from tab A", draft="1")
    assert first.status_code == 200  # still a draft: the message goes there
    second = send_from(alice, draft, "/", django_capture_on_commit_callbacks, message="from tab B", draft="1")
    mine = Conversation.objects.get(owner=cast["alice"], messages__content="from tab B")
    assert second.status_code == 204 and second["HX-Redirect"] == f"/c/{mine.pk}/"
    assert mine.pk != draft.pk and list(draft.messages.values_list("content", flat=True)) == ["from tab A"]
    # A follow-up (the page dropped its draft flag with the first send) stays in the conversation.
    Run.objects.filter(conversation=mine).update(status="succeeded")
    again = send_from(alice, mine, f"/c/{mine.pk}/", django_capture_on_commit_callbacks, message="more")
    assert again.status_code == 200
    assert list(mine.messages.filter(role="user").values_list("content", flat=True)) == ["from tab B", "more"]


def test_the_api_lists_no_draft_and_the_home_page_takes_no_api_conversation(
    cast, django_capture_on_commit_callbacks
):
    # Every visitor of the home page has a draft: the API listed it as the newest "New conversation".
    from chatapp.services import api_keys

    key = {"HTTP_AUTHORIZATION": "Bearer " + api_keys.create_key(cast["alice"], "k", "chat").secret}
    api = Client()
    made = api.post(
        "/api/conversations", data={"title": "from a script"}, content_type="application/json", **key
    )
    assert made.status_code == 201
    web = Client()
    web.force_login(cast["alice"])
    assert web.get("/").status_code == 200
    draft = Conversation.objects.get(owner=cast["alice"], draft=True)
    assert draft.pk != made.json()["id"], "the home page handed out the API's empty conversation"
    listed = [c["id"] for c in api.get("/api/conversations", **key).json()]
    assert listed == [made.json()["id"]]
    sent = send_from(web, draft, "/", django_capture_on_commit_callbacks, message="hello")
    assert sent.status_code == 200
    listed = [c["id"] for c in api.get("/api/conversations", **key).json()]
    assert set(listed) == {made.json()["id"], draft.pk}
