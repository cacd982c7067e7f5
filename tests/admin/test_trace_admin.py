"""Runs, rounds, events, approvals, conversations and messages: read-only in the admin."""

from __future__ import annotations

import pytest

from chatapp.models import Approval, Conversation, Message, Round, Run, RunEvent, ToolCall
from tests.admin.test_approvals import XSS, XSS_ESCAPED, waiting_call

MODELS = ["run", "round", "runevent", "approval", "conversation", "message"]


@pytest.fixture
def trace(people):
    call = waiting_call(people["alice"], text=f"hello {XSS}")
    RunEvent.objects.create(run=call.run, seq=1, type="round_finished", payload={"text": XSS}, durable=True)
    Round.objects.filter(run=call.run).update(request={"body": {"messages": [{"content": XSS}]}})
    Approval.objects.create(tool_call=call, decision="denied", decided_by=people["ada"], reason=XSS)
    return call


def _object(model: str, call: ToolCall):
    return {
        "run": call.run,
        "round": Round.objects.get(run=call.run),
        "runevent": RunEvent.objects.get(run=call.run),
        "approval": Approval.objects.get(tool_call=call),
        "conversation": call.run.conversation,
        "message": Message.objects.filter(conversation=call.run.conversation).last(),
    }[model]


@pytest.mark.parametrize("model", MODELS)
def test_it_shows_but_never_changes_the_trace(login, trace, model):
    client = login("ada")
    obj = _object(model, trace)
    base = f"/admin/chatapp/{model}/"
    listing = client.get(base)
    assert listing.status_code == 200
    assert f'href="{base}add/"' not in listing.content.decode()
    detail = client.get(f"{base}{obj.pk}/change/")
    assert detail.status_code == 200
    body = detail.content.decode()
    assert 'name="_save"' not in body
    assert XSS not in body and XSS not in listing.content.decode()
    assert client.get(f"{base}add/").status_code == 403
    assert client.post(f"{base}{obj.pk}/change/", {}).status_code == 403
    assert client.get(f"{base}{obj.pk}/delete/").status_code == 403
    assert type(obj).objects.filter(pk=obj.pk).exists()


def test_round_and_event_payloads_are_shown_escaped(login, trace):
    client = login("ada")
    round_page = client.get(
        f"/admin/chatapp/round/{Round.objects.get(run=trace.run).pk}/change/"
    ).content.decode()
    assert XSS_ESCAPED in round_page
    event_page = client.get(
        f"/admin/chatapp/runevent/{RunEvent.objects.get(run=trace.run).pk}/change/"
    ).content.decode()
    assert XSS_ESCAPED in event_page


def test_conversation_links_to_its_messages(login, trace):
    client = login("ada")
    conversation = Conversation.objects.get()
    page = client.get(f"/admin/chatapp/conversation/{conversation.pk}/change/").content.decode()
    link = f"/admin/chatapp/message/?conversation__id__exact={conversation.pk}"
    assert link in page.replace("&amp;", "&")
    assert client.get(link).status_code == 200


def test_plain_staff_see_only_what_they_have_view_permission_for(login, trace):
    client = login("stan")  # view_run and view_toolcall, but not approve_toolcall
    assert client.get(f"/admin/chatapp/run/{Run.objects.get().pk}/change/").status_code == 200
    assert client.get("/admin/chatapp/round/").status_code == 403
    assert client.get("/admin/chatapp/toolcall/").status_code == 403
