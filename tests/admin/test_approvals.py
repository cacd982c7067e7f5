"""The approval queue in the admin (R-TOOL-2, R-UI-3): review, approve / deny with a reason, who may."""

from __future__ import annotations

import html
import json

import pytest

from chatapp.models import Approval, Conversation, Message, Round, Run, ToolCall

QUEUE = "/admin/chatapp/toolcall/"
XSS = "<script>alert('x')</script>"
XSS_ESCAPED = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"


def waiting_call(
    owner, *, name="demo_tools__send_message", arguments=None, risk="high", text="Tell Bob hi"
) -> ToolCall:
    """A run stopped on one high-risk call, as the worker leaves it (rows written directly)."""
    conversation = Conversation.objects.create(owner=owner, title="Messages")
    Message.objects.create(conversation=conversation, role="user", content="an older question")
    Message.objects.create(conversation=conversation, role="assistant", content="an older answer")
    user_message = Message.objects.create(conversation=conversation, role="user", content=text)
    run = Run.objects.create(
        conversation=conversation,
        user_message=user_message,
        status=Run.Status.AWAITING_APPROVAL,
        provider_name="demo",
        model="clearloop-demo",
    )
    Round.objects.create(
        run=run,
        index=0,
        provider_name="demo",
        model="clearloop-demo",
        finish_reason="tool_calls",
        response={"choices": [{"index": 0, "text": "I will send the message now.", "tool_calls": []}]},
    )
    return ToolCall.objects.create(
        run=run,
        round_index=0,
        index=0,
        call_id="call_1",
        name=name,
        server="demo_tools",
        arguments=arguments if arguments is not None else json.dumps({"to": "bob", "text": "hi"}),
        status=ToolCall.Status.AWAITING_APPROVAL,
        risk=risk,
        definition={"name": name, "description": "Send a message", "parameters": {"type": "object"}},
        definition_hash="hash-123",
    )


def page(response) -> str:
    # The queue's tool names carry break points (<wbr>) after their underscores, for phones.
    return html.unescape(response.content.decode()).replace("<wbr>", "")


def test_the_queue_lists_pending_calls_by_default(login, people):
    call = waiting_call(people["alice"])
    decided = waiting_call(people["alice"], name="demo_tools__other")
    decided.status = ToolCall.Status.SUCCEEDED
    decided.save()
    body = page(login("april").get(QUEUE))
    assert "demo_tools__send_message" in body and "demo_tools__other" not in body
    assert f"run {call.run_id} (Awaiting approval)" in body  # the state in words, never snake_case
    assert "alice" in body and "high" in body
    everything = page(login("april").get(QUEUE + "?queue=all"))
    assert "demo_tools__other" in everything
    assert "demo_tools__other" in page(login("april").get(QUEUE + "?queue=succeeded"))


def test_the_review_page_shows_exact_arguments_definition_and_context(login, people):
    call = waiting_call(people["alice"], arguments='{"to":"bob","text":"hi  there","n":1}')
    response = login("april").get(f"{QUEUE}{call.pk}/change/")
    assert response.status_code == 200
    body = page(response)
    assert json.dumps({"to": "bob", "text": "hi  there", "n": 1}, indent=2) in body
    assert '"description": "Send a message"' in body
    assert "hash-123" in body
    for text in ("an older question", "an older answer", "Tell Bob hi", "I will send the message now."):
        assert text in body
    assert 'id="approve-form"' in body and 'id="deny-form"' in body
    assert 'name="csrfmiddlewaretoken"' in body
    assert 'name="_save"' not in body  # nothing about a call is editable


def test_approving_records_the_decision_and_requeues_the_run(
    login, people, django_capture_on_commit_callbacks
):
    call = waiting_call(people["alice"])
    client = login("april")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            f"{QUEUE}{call.pk}/decide/", {"decision": "approve", "reason": "Bob expects it"}
        )
    assert response.status_code == 302 and response["Location"] == QUEUE
    assert callbacks, "the resume task is enqueued after the commit"
    approval = Approval.objects.get(tool_call=call)
    assert (approval.decision, approval.decided_by, approval.reason) == (
        "approved",
        people["april"],
        "Bob expects it",
    )
    assert approval.definition_hash == "hash-123"
    call.refresh_from_db()
    call.run.refresh_from_db()
    assert call.status == ToolCall.Status.APPROVED
    assert call.run.status == Run.Status.QUEUED

    with django_capture_on_commit_callbacks(execute=False):
        again = client.post(
            f"{QUEUE}{call.pk}/decide/", {"decision": "deny", "reason": "changed my mind"}, follow=True
        )
    assert "already decided" in page(again)
    assert Approval.objects.filter(tool_call=call).count() == 1
    call.refresh_from_db()
    assert call.status == ToolCall.Status.APPROVED
    review = page(client.get(f"{QUEUE}{call.pk}/change/"))
    assert "Approved" in review and "Bob expects it" in review and 'id="approve-form"' not in review


def test_denying_needs_a_reason(login, people, django_capture_on_commit_callbacks):
    call = waiting_call(people["alice"])
    client = login("april")
    for data in ({"decision": "deny"}, {"decision": "deny", "reason": "   "}):
        response = client.post(f"{QUEUE}{call.pk}/decide/", data, follow=True)
        assert "Nothing was decided: A reason is required." in page(response)
    assert not Approval.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        client.post(f"{QUEUE}{call.pk}/decide/", {"decision": "deny", "reason": "not to Bob"})
    call.refresh_from_db()
    assert call.status == ToolCall.Status.DENIED
    assert Approval.objects.get(tool_call=call).reason == "not to Bob"


def test_the_owner_cannot_approve_their_own_high_risk_call(login, people, django_capture_on_commit_callbacks):
    call = waiting_call(people["april"])
    client = login("april")
    assert "your own conversation" in page(client.get(f"{QUEUE}{call.pk}/change/"))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            f"{QUEUE}{call.pk}/decide/", {"decision": "approve", "reason": "mine"}, follow=True
        )
    assert "You cannot approve a high-risk call made in your own conversation." in page(response)
    assert not callbacks
    assert not Approval.objects.exists()
    call.refresh_from_db()
    assert call.status == ToolCall.Status.AWAITING_APPROVAL


def test_a_superuser_may_decide(login, people, django_capture_on_commit_callbacks):
    call = waiting_call(people["alice"])
    with django_capture_on_commit_callbacks(execute=False):
        login("ada").post(f"{QUEUE}{call.pk}/decide/", {"decision": "approve", "reason": "ok"})
    assert Approval.objects.get(tool_call=call).decided_by == people["ada"]


@pytest.mark.parametrize("who", ["stan"])
def test_staff_without_the_permission_get_403(login, people, who):
    call = waiting_call(people["alice"])
    client = login(who)
    assert client.get(QUEUE).status_code == 403
    assert client.get(f"{QUEUE}{call.pk}/change/").status_code == 403
    assert client.post(f"{QUEUE}{call.pk}/decide/", {"decision": "approve", "reason": "x"}).status_code == 403
    assert "Tool calls" not in page(client.get("/admin/"))
    assert not Approval.objects.exists()


@pytest.mark.parametrize("who", ["otto", "alice"])
def test_people_who_are_not_staff_cannot_enter_the_admin(login, people, who):
    call = waiting_call(people["alice"])
    client = login(who)
    for response in (
        client.get("/admin/"),
        client.get(QUEUE),
        client.post(f"{QUEUE}{call.pk}/decide/", {"decision": "approve", "reason": "x"}),
    ):
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert not Approval.objects.exists()


def test_the_review_page_escapes_model_and_tool_text(login, people):
    call = waiting_call(
        people["alice"],
        name=f"demo_tools__{XSS}",
        arguments=json.dumps({"text": XSS}),
        text=f"please send {XSS}",
    )
    call.definition = {"name": XSS, "description": XSS, "parameters": {"type": "object"}}
    call.save()
    Round.objects.filter(run=call.run).update(response={"choices": [{"text": f"sure {XSS}"}]})
    call.run.conversation.title = XSS
    call.run.conversation.save()
    client = login("april")
    for url in (f"{QUEUE}{call.pk}/change/", QUEUE):
        body = client.get(url).content.decode()
        assert XSS not in body, url
        assert XSS_ESCAPED in body, url
    review = client.get(f"{QUEUE}{call.pk}/change/").content.decode()
    assert f"please send {XSS_ESCAPED}" in review
    assert f"sure {XSS_ESCAPED}" in review
    assert "&quot;text&quot;: &quot;&lt;script&gt;" in review  # the arguments, pretty-printed and escaped


def test_a_cancelled_run_leaves_the_approval_queue(login, people, django_capture_on_commit_callbacks):
    # Review I4: a cancelled run's pending call stayed in the queue and could still be "approved".
    from chatapp.services.approvals import AlreadyDecided, decide, pending
    from chatapp.services.runs import request_cancel

    call = waiting_call(people["alice"])
    assert call in pending()
    request_cancel(call.run)
    call.refresh_from_db()
    assert call.run.status == Run.Status.CANCELLED
    assert call.status == ToolCall.Status.DENIED and call.error_code == "run_ended"
    assert "did not run" in call.result
    assert call not in pending()
    client = login("april")
    queue = page(client.get(QUEUE))
    assert f"{QUEUE}{call.pk}/change/" not in queue
    with pytest.raises(AlreadyDecided):
        decide(call.pk, people["april"], approve=True, reason="too late")
    assert not Approval.objects.filter(tool_call=call).exists()
