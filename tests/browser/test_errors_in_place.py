"""Errors in place: every refused send says why under the message box and keeps the text; the
websocket's state is on screen. These fail when a 422/429 reason is not visible (htmx swaps no 4xx
unless told to: base.html's responseHandling)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message, ProviderConfig, Run

pytestmark = pytest.mark.django_db(transaction=True)


def open_conversation(page_for, convo: Conversation, viewport: dict | None = None):
    page = page_for("alice", "alice-pass", viewport)
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    return page


def send_and_expect_refusal(page, text: str, reason: str) -> None:
    page.fill("#message", text)
    page.click("#composer button[type=submit]")
    error = page.locator("#composer #send-error")
    expect(error).to_be_visible(timeout=15_000)
    expect(error).to_contain_text(reason)
    assert page.input_value("#message") == text  # nothing the person typed is lost


def test_empty_and_too_long_messages_say_why_and_keep_the_text(cast, demo_provider, page_for, artifacts):
    convo = Conversation.objects.create(owner=cast["alice"], title="refusals")
    page = open_conversation(page_for, convo)
    expect(page.locator("#ws-state")).to_have_text("Live")
    send_and_expect_refusal(page, "   ", "The message is empty")
    long_text = "x" * 120_000
    send_and_expect_refusal(page, long_text, "the limit is 100,000 bytes")
    page.screenshot(path=str(artifacts / "errors-too-long-1440.png"))
    assert not Run.objects.filter(conversation=convo).exists()
    # A good message afterwards clears the reason and the box.
    page.fill("#message", "hello again")
    page.click("#composer button[type=submit]")
    expect(page.locator("[data-role=answer]")).to_be_visible(timeout=60_000)
    expect(page.locator("#send-error")).to_be_hidden()
    assert page.input_value("#message") == ""


def busy_conversation(owner) -> Conversation:
    """A conversation whose run waits for an approval: a send to it is refused (409)."""
    convo = Conversation.objects.create(owner=owner, title="busy")
    question = Message.objects.create(conversation=convo, role="user", content="first", payload={})
    # Waiting for an approval holds no worker: nothing will move this run while the test runs.
    Run.objects.create(
        conversation=convo,
        user_message=question,
        provider_name="demo",
        model="clearloop-demo",
        status="awaiting_approval",
    )
    return convo


def test_send_while_a_run_is_active_says_so_in_place(cast, demo_provider, page_for, artifacts):
    convo = busy_conversation(cast["alice"])
    page = open_conversation(page_for, convo, {"width": 375, "height": 812})
    send_and_expect_refusal(page, "second question", "still answering")
    page.screenshot(path=str(artifacts / "errors-run-active-375.png"))
    assert Run.objects.filter(conversation=convo).count() == 1


def test_a_disabled_provider_is_refused_with_the_reason_not_swapped_silently(cast, demo_provider, page_for):
    off = ProviderConfig.objects.create(
        name="off", label="Switched off", base_url="http://127.0.0.1:9/v1", model="x", preset="demo"
    )
    convo = Conversation.objects.create(owner=cast["alice"], title="off", provider=off)
    page = open_conversation(page_for, convo)
    ProviderConfig.objects.filter(pk=off.pk).update(enabled=False)
    send_and_expect_refusal(page, "are you there?", "(Switched off) has been disabled by an admin")
    assert not Run.objects.filter(conversation=convo).exists()


def test_the_connection_state_shows_reconnecting_then_live(cast, demo_provider, page_for):
    convo = Conversation.objects.create(owner=cast["alice"], title="socket")
    page = open_conversation(page_for, convo)
    page.context.set_offline(True)
    page.evaluate("window.dispatchEvent(new Event('offline'))")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "offline")
    expect(page.locator("#ws-state")).to_contain_text("Offline")
    page.context.set_offline(False)
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
