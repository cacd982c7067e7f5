"""An auditor in a real browser: browses and exports traces; every write attempt is refused."""

from __future__ import annotations

import json

import pytest

from chatapp.models import AuditEvent, Conversation, Message, Round, Run

pytestmark = pytest.mark.django_db(transaction=True)


def alices_run(cast) -> Run:
    convo = Conversation.objects.create(owner=cast["alice"], title="budget question")
    user = Message.objects.create(conversation=convo, role="user", content="what is the budget?")
    run = Run.objects.create(
        conversation=convo,
        user_message=user,
        provider_name="demo",
        model="clearloop-demo",
        status="succeeded",
        final_text="It is 42.",
    )
    Round.objects.create(
        run=run,
        index=0,
        provider_name="demo",
        model="clearloop-demo",
        finish_reason="stop",
        request={"messages": [{"role": "user", "content": "what is the budget?"}]},
        response={"choices": [{"index": 0, "text": "It is 42."}]},
        usage={"prompt_tokens": 9},
    )
    return run


def test_auditor_browses_exports_and_cannot_write(cast, demo_provider, page_for):
    run = alices_run(cast)
    page = page_for("otto", "otto-pass")
    assert "/audit/" in page.url  # auditors land on the trace browser
    page.click(f"a[href='/audit/runs/{run.pk}/']")
    # The click starts a navigation; wait for the run page itself before reading it (a loaded
    # machine showed the half-parsed document).
    page.wait_for_url(f"**/audit/runs/{run.pk}/")
    page.wait_for_load_state("domcontentloaded")
    assert "what is the budget?" in page.content()
    with page.expect_download() as download:
        page.click("text=Export OpenTelemetry JSON")
    otel = json.loads(open(download.value.path()).read())
    assert otel["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert AuditEvent.objects.filter(kind="export", actor="otto").exists()

    csrf = page.context.cookies()
    token = next((c["value"] for c in csrf if c["name"] == "csrftoken"), "")
    statuses = {}
    for url, data in (
        (f"/c/{run.conversation_id}/send/", "message=hijack"),
        (f"/c/{run.conversation_id}/rename/", "title=hijacked"),
        (f"/c/{run.conversation_id}/delete/", ""),
        (f"/runs/{run.pk}/cancel/", ""),
        (f"/runs/{run.pk}/regenerate/", ""),
        ("/c/new/", ""),
        (f"/audit/runs/{run.pk}/", "x=1"),
    ):
        response = page.request.post(
            url,
            data=data,
            headers={"X-CSRFToken": token, "Content-Type": "application/x-www-form-urlencoded"},
        )
        statuses[url] = response.status
    assert all(code in (403, 405) for code in statuses.values()), statuses
    assert page.request.get("/admin/chatapp/toolcall/").url.endswith(
        "/admin/login/?next=/admin/chatapp/toolcall/"
    )
    run.refresh_from_db()
    assert run.conversation.title == "budget question" and Run.objects.count() == 1
    assert not Message.objects.filter(content="hijack").exists()
