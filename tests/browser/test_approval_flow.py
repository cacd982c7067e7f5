"""Two people, two browsers: the user waits for approval live, an admin approves in the admin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chatapp.models import Run, ToolCall
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def outbox_lines(live_stack) -> list[str]:
    path = Path(live_stack.data_dir) / "outbox.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def test_user_sees_waiting_then_continues_live_after_an_admin_approves(
    cast, demo_tools, page_for, live_stack
):
    before = len(outbox_lines(live_stack))
    user = page_for("alice", "alice-pass")
    new_conversation(user)
    user.fill("#message", "send a text message to 13800000000 saying the deploy finished")
    user.press("#message", "Enter")
    waiting = user.locator("[data-role=waiting]")
    expect(waiting).to_contain_text("approval", timeout=60_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    call = ToolCall.objects.get(run=run, status="awaiting_approval")
    assert call.name == "demo_tools__send_message" and len(outbox_lines(live_stack)) == before

    admin = page_for("ada", "ada-pass")
    admin.goto("/admin/chatapp/toolcall/")  # the queue opens on pending calls
    admin.locator(f"a[href*='/admin/chatapp/toolcall/{call.pk}/change/']").first.click()
    expect(admin.locator("body")).to_contain_text("13800000000")  # the exact arguments
    expect(admin.locator("body")).to_contain_text(call.definition_hash[:12])
    admin.fill("#approve-reason", "the user asked for it")
    admin.click("#approve-form input[type=submit]")
    expect(admin.locator(".messagelist")).to_contain_text(re.compile("approved", re.I))

    # No reload on the user's side: the answer arrives over the websocket.
    answer = user.locator(f"#run-{run.pk} [data-role=answer]")
    answer.wait_for(timeout=60_000)
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert len(outbox_lines(live_stack)) == before + 1
    call.refresh_from_db()
    assert call.status == "succeeded" and call.approval.decided_by == cast["ada"]
    trace = user.locator(f"#run-{run.pk} [data-role=trace]")
    assert "the user asked for it" in trace.text_content()
