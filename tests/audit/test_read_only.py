"""Auditors change nothing: every write they could attempt is refused and leaves no trace of a change."""

from __future__ import annotations

import pytest

from chatapp.models import AuditEvent, Conversation, ProviderConfig, Run, ToolCall
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def alices_run(cast):
    return make_run(cast["alice"], text="alice's question", status="running")


@pytest.fixture
def otto(client_for):
    return client_for("otto")


@pytest.mark.parametrize(
    "path",
    [
        "/c/{c}/send/",
        "/c/{c}/rename/",
        "/c/{c}/delete/",
        "/c/{c}/settings/",
        "/runs/{r}/cancel/",
        "/runs/{r}/regenerate/",
    ],
)
def test_chat_writes_to_someone_elses_conversation_are_refused(otto, alices_run, path):
    convo = alices_run.conversation
    url = path.format(c=convo.pk, r=alices_run.pk)
    response = otto.post(url, {"message": "hijack", "title": "hijacked", "provider": "", "model": "x"})
    # Auditors are refused every write (403) before ownership is even looked at.
    assert response.status_code == 403
    convo.refresh_from_db()
    alices_run.refresh_from_db()
    assert convo.title == "alice's question" and convo.model_override == ""
    assert not alices_run.cancel_requested
    assert Run.objects.filter(conversation=convo).count() == 1
    assert not convo.messages.filter(content="hijack").exists()


def test_an_auditor_is_not_staff_and_the_admin_turns_them_away(otto, cast, alices_run):
    assert not cast["otto"].is_staff
    assert otto.get("/admin/").status_code == 302  # to the admin login: not a page they can use
    response = otto.post(
        "/admin/chatapp/providerconfig/add/", {"name": "evil", "base_url": "http://x", "model": "m"}
    )
    assert response.status_code in (302, 403, 404)
    assert not ProviderConfig.objects.filter(name="evil").exists()
    response = otto.post(f"/admin/auth/user/{cast['alice'].pk}/delete/", {"post": "yes"})
    assert response.status_code in (302, 403, 404)
    assert Conversation.objects.filter(pk=alices_run.conversation_id).exists()


def test_an_auditor_cannot_approve_through_the_admin(otto, cast, alices_run):
    call = ToolCall.objects.create(
        run=alices_run,
        round_index=0,
        index=5,
        call_id="c9",
        name="write_file",
        status="awaiting_approval",
        risk="high",
    )
    for path in ("/admin/chatapp/toolcall/", f"/admin/chatapp/toolcall/{call.pk}/change/"):
        response = otto.post(
            path, {"action": "approve", "_selected_action": [call.pk], "decision": "approve"}
        )
        assert response.status_code in (302, 403, 404)
    call.refresh_from_db()
    assert call.status == "awaiting_approval"


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
@pytest.mark.parametrize(
    "path", ["/audit/", "/audit/runs/{r}/", "/audit/runs/{r}/otel.json", "/audit/export.jsonl", "/audit/log/"]
)
def test_the_audit_pages_accept_only_get(otto, alices_run, method, path):
    response = getattr(otto, method)(path.format(r=alices_run.pk))
    assert response.status_code == 405
    assert not AuditEvent.objects.filter(kind="export").exists()


def test_the_trace_api_is_read_only_too(otto, alices_run):
    assert otto.post(f"/api/runs/{alices_run.pk}/trace").status_code == 405
