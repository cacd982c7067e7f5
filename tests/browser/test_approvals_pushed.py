"""The approvers' badge and live list are pushed (/ws/approvals/), not polled: a new waiting call, a
decision taken in another browser and a Stop each reach an approver's open page within seconds, while
every request for the polled count fails on purpose (so the poll cannot be what updated the page)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Run, ToolCall
from tests.browser.test_approvals_noticed import NOTIFICATION_SPY, ask_for_sms

pytestmark = pytest.mark.django_db(transaction=True)

PUSHED = 10_000  # ms; the fallback poll runs every 60 s, and only while the feed is down


def approver_without_the_poll(page_for, live_stack, path: str):
    page = page_for("ada", "ada-pass")
    polled: list[str] = []

    def refuse(route):
        polled.append(route.request.url)
        route.abort()

    page.context.route("**/approvals/count/*", refuse)
    page.context.route("**/approvals/count/", refuse)
    page.context.grant_permissions(["notifications"], origin=live_stack.base_url)
    page.context.add_init_script(NOTIFICATION_SPY)
    page.goto(path)
    expect(page.locator("[data-role=approvals]").first).to_have_attribute("data-feed", "live", timeout=PUSHED)
    return page, polled


def test_a_waiting_call_a_decision_elsewhere_and_a_stop_reach_the_approver_at_once(
    cast, demo_tools, page_for, live_stack, artifacts
):
    admin, polled = approver_without_the_poll(page_for, live_stack, "/admin/")
    badge = admin.locator("#site-name [data-role=approvals-badge]")
    expect(badge).to_be_hidden()

    # 1. A new waiting call: the badge appears, the notification fires, the open list shows it.
    user = page_for("alice", "alice-pass")
    ask_for_sms(user)
    expect(badge).to_contain_text("1 waiting for approval", timeout=PUSHED)
    admin.wait_for_function("window.__notes && window.__notes.length === 1", timeout=PUSHED)
    badge.click()
    listed = admin.locator("#site-name [data-role=approvals-panel] li[data-call]")
    expect(listed).to_have_count(1)
    admin.screenshot(path=str(artifacts / "approvals-pushed-admin-1440.png"))

    # A second call waits while the list is open: the list grows without a click.
    bob = page_for("bob", "bob-pass")
    ask_for_sms(bob)
    expect(badge).to_contain_text("2 waiting for approval", timeout=PUSHED)
    expect(listed).to_have_count(2, timeout=PUSHED)
    expect(listed.last).to_contain_text("bob")

    # 2. Decided in another browser: this page's badge and open list follow.
    bobs_call = ToolCall.objects.get(run__conversation__owner=cast["bob"], status="awaiting_approval")
    other = page_for("ada", "ada-pass")
    other.goto(f"/admin/chatapp/toolcall/{bobs_call.pk}/change/")
    other.fill("#deny-reason", "not now")
    other.click("#deny-form input[type=submit]")
    expect(badge).to_contain_text("1 waiting for approval", timeout=PUSHED)
    expect(listed).to_have_count(1, timeout=PUSHED)
    expect(listed).to_contain_text("alice")

    # 3. Stop during the wait: the call leaves the queue, the badge and the list go.
    user.locator("[data-role=approval-card] .approval-card button.stop").click()
    run = Run.objects.get(conversation__owner=cast["alice"])
    expect(user.locator(f"#run-{run.pk} [data-role=status]")).to_have_text("Cancelled", timeout=15_000)
    expect(badge).to_be_hidden(timeout=PUSHED)
    expect(admin.locator("#site-name [data-role=approvals-panel]")).to_be_hidden()
    assert admin.evaluate("window.__notes.length") == 2  # one per new call, none for the removals
    assert polled == []  # every update above came over the socket


def test_the_chat_page_badge_is_pushed_too_and_a_refused_feed_breaks_nothing(
    cast, demo_tools, page_for, live_stack, artifacts
):
    admin, polled = approver_without_the_poll(page_for, live_stack, "/")
    badge = admin.locator("[data-role=approvals-badge]")
    user = page_for("alice", "alice-pass", {"width": 375, "height": 812})
    ask_for_sms(user)
    expect(badge).to_contain_text("1 waiting for approval", timeout=PUSHED)
    for width, scheme in ((1440, "light"), (1440, "dark"), (375, "light"), (375, "dark")):
        admin.set_viewport_size({"width": width, "height": 900 if width > 375 else 812})
        admin.emulate_media(color_scheme=scheme)
        admin.screenshot(path=str(artifacts / f"approvals-badge-chat-{width}-{scheme}.png"), animations="disabled")
    assert polled == []



def test_a_refused_feed_leaves_the_badge_as_rendered_and_shows_no_error(cast, page_for, live_stack):
    # Refused as the server refuses a non-approver (4403): the page keeps the count it was rendered
    # with, stops retrying, polls no more (the count would answer 403 too) and raises no error.
    page = page_for("ada", "ada-pass")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    attempts: list[str] = []

    def refuse(ws):
        attempts.append(ws.url)
        ws.close(code=4403, reason="forbidden")

    page.context.route_web_socket("**/ws/approvals/", refuse)
    page.goto("/")
    root = page.locator("[data-role=approvals]")
    expect(root).to_have_attribute("data-feed", "refused", timeout=PUSHED)
    expect(page.locator("[data-role=approvals-badge]")).to_be_hidden()  # nothing waits: no badge
    expect(page.locator("[data-role=drawer-toggle], #message, .brand").first).to_be_attached()
    assert len(attempts) == 1 and errors == []
