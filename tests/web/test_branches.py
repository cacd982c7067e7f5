"""Edit and regenerate make branches; the page and the model see only the active one; nothing is lost."""

from __future__ import annotations

import pytest
from django.test import Client

from chatapp.models import Conversation, Message, Run
from chatapp.worker.context import history


@pytest.fixture
def alice(cast):
    client = Client()
    client.force_login(cast["alice"])
    return client


@pytest.fixture
def convo(cast):
    return Conversation.objects.create(owner=cast["alice"])


def answered(run: Run, text: str) -> Run:
    Message.objects.create(conversation=run.conversation, run=run, role="assistant", content=text,
                           payload={"role": "assistant", "content": text})
    Run.objects.filter(pk=run.pk).update(status="succeeded")
    run.refresh_from_db()
    return run


def send(client, convo, text) -> Run:
    response = client.post(f"/c/{convo.pk}/send/", {"message": text}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200, response.content
    return answered(Run.objects.latest("id"), f"answer to {text}")


def texts(run: Run) -> list[str]:
    return [m.content for m in history(run)[1:]]


def test_edit_starts_a_branch_the_model_sees_only_it_and_switching_brings_the_other_back(alice, convo):
    send(alice, convo, "q1")
    run2 = send(alice, convo, "q2")
    question2 = run2.user_message
    response = alice.post(f"/messages/{question2.pk}/edit/", {"message": "q2 edited"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and response["HX-Redirect"] == f"/c/{convo.pk}/"
    run3 = Run.objects.latest("id")
    assert texts(run3) == ["q1", "answer to q1", "q2 edited"]  # q2 and its answer are on the other branch
    answered(run3, "answer to q2 edited")
    page = alice.get(f"/c/{convo.pk}/").content.decode()
    assert "q2 edited" in page and "answer to q2 edited" in page
    assert ">q2<" not in page and "answer to q2<" not in page
    assert '<span data-role="branch-position">2/2</span>' in page
    response = alice.post(f"/c/{convo.pk}/branch/", {"message": question2.pk}, HTTP_HX_REQUEST="true")
    assert response.status_code == 204
    page = alice.get(f"/c/{convo.pk}/").content.decode()
    assert "answer to q2</p>" in page and "q2 edited</div>" not in page
    assert '<span data-role="branch-position">1/2</span>' in page
    # A new message follows the branch on screen.
    run4 = send(alice, convo, "q3")
    assert texts(run4) == ["q1", "answer to q1", "q2", "answer to q2", "q3"]
    assert Message.objects.filter(conversation=convo, role="user").count() == 4  # nothing was deleted


def test_regenerate_makes_a_sibling_answer_in_place(alice, convo):
    run1 = send(alice, convo, "q1")
    send(alice, convo, "q2")
    response = alice.post(f"/runs/{run1.pk}/regenerate/", HTTP_HX_REQUEST="true")
    assert response.status_code == 204
    again = Run.objects.latest("id")
    assert again.user_message_id == run1.user_message_id  # the same question, not a copy at the bottom
    assert texts(again) == ["q1"]
    assert Message.objects.filter(conversation=convo, role="user").count() == 2
    answered(again, "second answer to q1")
    page = alice.get(f"/c/{convo.pk}/").content.decode()
    assert "second answer to q1" in page and "answer to q2" not in page
    assert 'data-role="branch-run"' in page and '<span data-role="branch-position">2/2</span>' in page
    alice.post(f"/c/{convo.pk}/branch/", {"run": run1.pk}, HTTP_HX_REQUEST="true")
    page = alice.get(f"/c/{convo.pk}/").content.decode()
    assert "answer to q2" in page and "second answer to q1" not in page  # back to the whole first branch


def test_switching_while_a_run_streams_is_refused_with_a_reason(alice, convo):
    run1 = send(alice, convo, "q1")
    alice.post(f"/runs/{run1.pk}/regenerate/", HTTP_HX_REQUEST="true")  # queued: still active
    response = alice.post(f"/c/{convo.pk}/branch/", {"run": run1.pk}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and "still answering" in response.content.decode()
    assert Conversation.objects.get(pk=convo.pk).active_run_id == Run.objects.latest("id").pk


def test_other_users_cannot_edit_or_switch(cast, alice, convo):
    run1 = send(alice, convo, "q1")
    bob = Client()
    bob.force_login(cast["bob"])
    assert bob.post(f"/messages/{run1.user_message_id}/edit/", {"message": "x"}).status_code == 404
    assert bob.post(f"/c/{convo.pk}/branch/", {"run": run1.pk}).status_code == 404
    assert bob.post(f"/runs/{run1.pk}/regenerate/").status_code == 404
    assert Run.objects.count() == 1


def test_a_branch_of_another_conversation_is_refused(cast, alice, convo):
    other = Conversation.objects.create(owner=cast["alice"])
    foreign = send(alice, other, "elsewhere")
    send(alice, convo, "q1")
    response = alice.post(f"/c/{convo.pk}/branch/", {"run": foreign.pk}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and "not part of this conversation" in response.content.decode()


def test_an_empty_edit_is_refused_and_the_original_kept(alice, convo):
    run1 = send(alice, convo, "q1")
    response = alice.post(f"/messages/{run1.user_message_id}/edit/", {"message": "  "}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and "empty" in response.content.decode()
    assert Run.objects.count() == 1


def test_the_approver_sees_the_branch_that_led_to_the_call(alice, convo):
    from chatapp.admin.approvals import conversation_excerpt
    from chatapp.models import ToolCall

    send(alice, convo, "q1")
    run2 = send(alice, convo, "q2")
    alice.post(f"/messages/{run2.user_message_id}/edit/", {"message": "q2 edited"}, HTTP_HX_REQUEST="true")
    run3 = Run.objects.latest("id")
    call = ToolCall.objects.create(run=run3, round_index=0, index=0, call_id="c", name="send_message")
    assert [m.content for m in conversation_excerpt(call)] == ["q1", "answer to q1", "q2 edited"]


def test_a_long_branch_is_read_in_three_queries_with_the_edited_sibling_left_out(
    alice, convo, django_assert_max_num_queries
):
    from chatapp.worker.context import branch_rows

    for i in range(8):
        send(alice, convo, f"q{i}")
    sibling = Run.objects.filter(conversation=convo).order_by("id")[7]
    response = alice.post(
        f"/messages/{sibling.user_message_id}/edit/", {"message": "q7 edited"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 204
    run = Run.objects.get(pk=Run.objects.latest("id").pk)
    with django_assert_max_num_queries(3):  # it was three per earlier exchange (22 here)
        rows = branch_rows(run)
    expected = [t for i in range(7) for t in (f"q{i}", f"answer to q{i}")] + ["q7 edited"]
    assert [m.content for m in rows] == expected


def test_an_edited_question_keeps_and_shows_its_files_edit_after_edit(alice, convo, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.WORKSPACE_ROOT = tmp_path / "workspaces"  # a workspace of its own, empty

    stored = alice.post(f"/c/{convo.pk}/files/upload/", {"file": [SimpleUploadedFile("sales.csv", b"a,b\n1,2\n")]})
    file_id = stored.json()["files"][0]["id"]
    response = alice.post(f"/c/{convo.pk}/send/", {"message": "q1", "attachment": [file_id]}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    first = answered(Run.objects.latest("id"), "answer to q1")
    for edit in ("q1 edited", "q1 edited again"):
        question = Run.objects.latest("id").user_message
        alice.post(f"/messages/{question.pk}/edit/", {"message": edit}, HTTP_HX_REQUEST="true")
        run = answered(Run.objects.latest("id"), f"answer to {edit}")
        assert run.user_message.content == edit and "sales.csv (8 bytes)" in run.user_message.payload["content"]
        assert [u.name for u in run.user_message.attached()] == ["sales.csv"]
        page = alice.get(f"/c/{convo.pk}/").content.decode()
        assert f">{edit}<" in page or f"{edit}</div>" in page
        assert 'data-role="attachments"' in page and ">sales.csv</a>" in page  # the chip stays on the edit
    assert [u.name for u in first.user_message.attached()] == ["sales.csv"]  # the original keeps it too
