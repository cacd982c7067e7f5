"""Approvals people notice: the user's approval card (timer, Stop), the approvers' badge on every
page (chat and admin), live both ways; Stop takes the call out of the queue; a denied call never
shows "Succeeded"."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chatapp.models import Run, ToolCall
from chatapp.services.approvals import pending_count
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)

SMS = "send a text message to 13800000000 saying the deploy finished"


def ask_for_sms(page):
    new_conversation(page)  # on a phone through the drawer; waits until the page listens
    page.fill("#message", SMS)
    page.press("#message", "Enter")
    card = page.locator("[data-role=approval-card] .approval-card")
    expect(card).to_be_visible(timeout=60_000)
    return card


# Records each notification the page raises, then lets the browser's own Notification show it.
NOTIFICATION_SPY = """(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notes = [];
  class Spy extends Real {
    constructor(title, options) { super(title, options); window.__notes.push({ title: title, body: (options || {}).body }); }
  }
  window.Notification = Spy;
})();"""


def test_the_card_counts_the_wait_and_stop_takes_the_call_out_of_the_queue(
    cast, demo_tools, page_for, artifacts, live_stack
):
    admin = page_for("ada", "ada-pass")
    admin.context.grant_permissions(["notifications"], origin=live_stack.base_url)
    admin.context.add_init_script(NOTIFICATION_SPY)
    admin.reload()
    badge = admin.locator("[data-role=approvals-badge]")
    expect(badge).to_be_hidden()
    user = page_for("alice", "alice-pass", {"width": 375, "height": 812})
    card = ask_for_sms(user)
    expect(card).to_contain_text("demo_tools__send_message")
    expect(card).to_contain_text("13800000000")
    expect(card.locator("[data-role=approval-timer]")).to_have_text(
        re.compile(r"^[1-9]\d* s$"), timeout=5_000
    )
    user.screenshot(path=str(artifacts / "approval-card-375.png"))
    # The approver's badge appears without a reload, on the chat page and in the admin.
    expect(badge).to_be_visible(timeout=15_000)
    expect(badge).to_contain_text("1 waiting for approval")
    # The approver was told: a browser notification names the tool and whose chat it is in.
    admin.wait_for_function("window.__notes && window.__notes.length === 1")
    assert admin.evaluate("window.__notes") == [
        {"title": "clearloop: 1 tool call waiting for approval", "body": "demo_tools__send_message in alice's chat"}
    ]
    # The badge opens the live list: the call, its arguments, whose chat, linked to its review page.
    badge.click()
    listed = admin.locator("[data-role=approvals-panel] li[data-call]")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("demo_tools__send_message")
    expect(listed).to_contain_text("13800000000")
    expect(listed).to_contain_text("alice")
    waiting = ToolCall.objects.get(run__conversation__owner=cast["alice"])
    expect(listed.locator("a")).to_have_attribute("href", f"/admin/chatapp/toolcall/{waiting.pk}/change/")
    expect(admin.locator("[data-role=approvals-notify-state]")).to_have_text("Browser notifications are on.")
    admin.screenshot(path=str(artifacts / "approvals-list-1280.png"))
    admin.emulate_media(color_scheme="dark")
    admin.set_viewport_size({"width": 375, "height": 812})
    panel_box = admin.locator("[data-role=approvals-panel]").bounding_box()
    assert panel_box and panel_box["x"] >= 0 and panel_box["x"] + panel_box["width"] <= 375  # on screen
    admin.screenshot(path=str(artifacts / "approvals-list-375-dark.png"), animations="disabled")
    admin.emulate_media(color_scheme="light")
    admin.set_viewport_size({"width": 1280, "height": 900})
    admin.keyboard.press("Escape")
    expect(admin.locator("[data-role=approvals-panel]")).to_be_hidden()
    admin.goto("/admin/")
    expect(admin.locator("#site-name [data-role=approvals-badge]")).to_contain_text("1 waiting")
    admin.locator("#site-name [data-role=approvals-badge]").click()
    expect(admin.locator("#site-name [data-role=approvals-panel] li[data-call]")).to_have_count(1)
    admin.screenshot(path=str(artifacts / "approval-badge-admin-1440.png"))

    card.locator("button.stop").click()
    run = Run.objects.get(conversation__owner=cast["alice"])
    expect(user.locator(f"#run-{run.pk} [data-role=status]")).to_have_text("Cancelled", timeout=15_000)
    expect(user.locator("[data-role=approval-card] .approval-card")).to_have_count(0)
    call = ToolCall.objects.get(run=run)
    assert call.status == "denied" and call.error_code == "run_ended"
    assert pending_count() == 0
    # The open list follows the queue: the stopped call leaves it, and the list closes with the badge.
    expect(admin.locator("#site-name [data-role=approvals-badge]")).to_be_hidden(timeout=15_000)
    expect(admin.locator("#site-name [data-role=approvals-panel]")).to_be_hidden()


def test_a_denied_call_shows_denied_live_and_after_the_run(cast, demo_tools, page_for, artifacts):
    user = page_for("alice", "alice-pass")
    ask_for_sms(user)
    run = Run.objects.get(conversation__owner=cast["alice"])
    call = ToolCall.objects.get(run=run, status="awaiting_approval")
    admin = page_for("ada", "ada-pass")
    admin.goto(f"/admin/chatapp/toolcall/{call.pk}/change/")
    admin.fill("#deny-reason", "not today")
    admin.click("#deny-form input[type=submit]")
    status = user.locator(f"#run-{run.pk} [data-role=status]")
    expect(user.locator(f"#run-{run.pk} [data-role=answer]")).to_be_visible(timeout=60_000)
    expect(status).to_have_text("Denied")
    expect(status).to_have_class(re.compile("status-denied"))
    user.screenshot(path=str(artifacts / "approval-denied-1440.png"))
    user.reload()
    expect(user.locator(f"#run-{run.pk} [data-role=status]")).to_have_text("Denied")
    # Its own stored state, not a view of "succeeded": the API and the audit read the same.
    run.refresh_from_db()
    assert run.status == "denied" and run.final_text


def test_a_policy_that_asks_the_user_is_answered_in_the_chat(cast, demo_tools, page_for, live_stack):
    from chatapp.models import ToolPolicy

    ToolPolicy.objects.filter(pattern="demo_tools__send_message").update(approver="user")
    assert ToolPolicy.objects.get(pattern="demo_tools__send_message").approver == "user"
    user = page_for("alice", "alice-pass")
    admin = page_for("ada", "ada-pass")
    card = ask_for_sms(user)
    expect(card).to_contain_text("asks for your OK")
    # The user's to answer: the approvers' badge, list and queue do not count it.
    assert pending_count() == 0
    admin.reload()
    expect(admin.locator("[data-role=approvals-badge]")).to_be_hidden()
    card.locator("[data-role=allow-once]").click()
    run = Run.objects.get(conversation__owner=cast["alice"])
    expect(user.locator(f"#run-{run.pk} [data-role=answer]")).to_be_visible(timeout=60_000)
    call = ToolCall.objects.get(run=run)
    assert call.status == "succeeded"
    assert call.approval.decided_by == cast["alice"] and call.approval.reason == "Allowed once in the chat"
    expect(user.locator(f"#run-{run.pk} [data-role=status]")).to_have_text("Succeeded")
