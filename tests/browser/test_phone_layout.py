"""On a phone the conversation list is a drawer: the conversation starts at the top of the screen,
the ☰ button opens the list, Escape closes it, and nothing scrolls sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 375, "height": 812}


def test_the_conversation_list_is_a_drawer_on_a_phone(cast, demo_provider, page_for, artifacts):
    convo = Conversation.objects.create(owner=cast["alice"], title="on the phone")
    Message.objects.create(conversation=convo, role="user", content="hi", payload={})  # listed once it has one
    page = page_for("alice", "alice-pass", PHONE)
    page.goto(f"/c/{convo.pk}/")
    sidebar = page.locator("#sidebar")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    box = sidebar.bounding_box()
    assert box["x"] + box["width"] <= 0, box  # off screen until asked for
    assert page.locator(".chat-head").bounding_box()["y"] < 130  # the conversation, not the list, comes first
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(artifacts / f"phone-chat-375-{scheme}.png"))
    toggle = page.locator("[data-role=drawer-toggle]")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(sidebar).to_have_class("sidebar open")
    expect(sidebar.locator("a", has_text="on the phone")).to_be_in_viewport(ratio=1)
    page.screenshot(path=str(artifacts / "phone-drawer-375-dark.png"))
    page.keyboard.press("Escape")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    assert page.evaluate("document.documentElement.scrollWidth") <= 380
    page.set_viewport_size({"width": 1440, "height": 900})
    expect(toggle).to_be_hidden()
    assert sidebar.bounding_box()["x"] >= 0
