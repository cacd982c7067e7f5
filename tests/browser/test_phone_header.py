"""On a phone (375 × 812) the chat's header is compact: the top bar and the conversation's bar are one
row each and together take at most 15 % of the screen, so the messages get the rest; every control
they held stays reachable, through the menu under the person's name (the links) and ⚙ (model, tools, Delete, the panels)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 375, "height": 812}


def test_the_header_is_compact_on_a_phone_and_every_control_is_reachable(cast, demo_provider, page_for, artifacts):
    convo = Conversation.objects.create(owner=cast["ada"], title="a rather long conversation title for a phone")
    Message.objects.create(conversation=convo, role="user", content="hi", payload={})
    page = page_for("ada", "ada-pass", PHONE)  # an approver and staff: the fullest top bar
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)

    top = page.locator(".topbar").bounding_box()
    head = page.locator(".chat-head").bounding_box()
    messages = page.locator("#messages").bounding_box()
    assert top and head and messages
    assert top["height"] <= 48 and head["height"] <= 48, (top, head)  # one row each
    assert messages["y"] <= 0.15 * PHONE["height"], messages  # the header takes at most 15 %
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(artifacts / f"chat-header-375-{scheme}.png"), animations="disabled")
    page.emulate_media(color_scheme="light")

    # The menu under the person's name: every link of the top bar, on screen.
    menu = page.locator("[data-role=menu-toggle]")
    expect(menu).to_contain_text("ada")
    expect(page.locator("#topnav")).to_be_hidden()
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    for control in ("a[href='/admin/']", "a[href='/keys/']", "#theme-toggle", "[data-role=language-menu]", "form[action$='/logout/'] button"):
        expect(page.locator(f"#topnav {control}")).to_be_in_viewport(ratio=1)
    page.screenshot(path=str(artifacts / "chat-header-375-menu.png"), animations="disabled")
    page.keyboard.press("Escape")
    expect(page.locator("#topnav")).to_be_hidden()
    expect(menu).to_be_focused()

    # ⚙: the model picker (applied on change), the override, tools, Delete and the panels, on screen.
    options = page.locator("[data-role=options-toggle]")
    expect(page.locator("[data-role=model-menu]")).to_be_hidden()
    options.click()
    expect(options).to_have_attribute("aria-expanded", "true")
    for control in ("[data-role=model-menu]", "input[name=model]", ".tools-menu summary",
                    "[data-role=delete-conversation]", "[data-role=share-details] summary", "[data-role=files-details] summary"):
        expect(page.locator(f"#chat-options {control}")).to_be_in_viewport(ratio=1)
    page.screenshot(path=str(artifacts / "chat-header-375-options.png"), animations="disabled")
    page.locator("[data-role=model-menu]").select_option(index=1)
    expect(page.locator("[data-role=picker-status]")).to_contain_text("Saved", timeout=10_000)
    page.mouse.click(200, 600)  # a tap outside closes it
    expect(page.locator("#chat-options")).to_be_hidden()

    # The title, the live state and the drawer stay in the bar itself.
    expect(page.locator("#title-input")).to_be_in_viewport(ratio=1)
    expect(page.locator("#ws-state")).to_be_in_viewport()
    page.locator("[data-role=drawer-toggle]").click()
    expect(page.locator("#sidebar")).to_have_class("sidebar open")
    page.keyboard.press("Escape")
    expect(page.locator("#message")).to_be_in_viewport(ratio=1)

    # On a desktop nothing is folded: no Menu or ⚙, the picker and the links in place.
    page.set_viewport_size({"width": 1440, "height": 900})
    expect(menu).to_be_hidden()
    expect(options).to_be_hidden()
    expect(page.locator("[data-role=model-menu]")).to_be_visible()
    expect(page.locator("#topnav a[href='/admin/']")).to_be_visible()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(artifacts / f"chat-header-1440-{scheme}.png"), animations="disabled")
