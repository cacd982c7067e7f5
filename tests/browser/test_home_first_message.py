"""A first message from the home page is answered on the same page: the home page is the user's draft
conversation with its socket already open, so the send is an ordinary one (no trip to a new page, which
cost a first message ~100 ms before its first token, bench/page). The address, the title and the list
follow; Reload, Back and Forward behave as after a navigation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message

pytestmark = pytest.mark.django_db(transaction=True)


def open_home(page_for, viewport: dict | None = None, dark: bool = False):
    page = page_for("alice", "alice-pass", viewport)
    if dark:
        page.emulate_media(color_scheme="dark")
    page.goto("/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    return page


def test_the_first_message_is_answered_on_the_home_page_without_loading_another(
    cast, demo_provider, page_for, artifacts
):
    page = open_home(page_for, {"width": 1440, "height": 900})
    expect(page.locator("[data-role=welcome]")).to_be_visible()
    assert page.title() == "clearloop"
    expect(page.locator("[data-role=delete-conversation]")).to_be_hidden()  # nothing to delete yet
    page.screenshot(path=str(artifacts / "home-1440-light.png"))
    # A page load would drop this; the send must keep the document (and its open socket).
    page.evaluate("window.__samePage = 'yes'")
    page.fill("#message", "Hello from the home page")
    page.press("#message", "Enter")
    answer = page.locator("[data-role=answer]")
    expect(answer).to_contain_text("Hello from the home page", timeout=60_000)
    convo = Conversation.objects.filter(owner=cast["alice"], messages__isnull=False).distinct().get()
    assert page.evaluate("window.__samePage") == "yes"
    expect(page).to_have_url(f"{page.url.split('/c/')[0].rstrip('/')}/c/{convo.pk}/")
    expect(page).to_have_title("Hello from the home page · clearloop")
    expect(page.locator("#title-input")).to_have_value("Hello from the home page")
    expect(page.locator(f'#conversation-list a[href="/c/{convo.pk}/"]')).to_have_count(1)
    expect(page.locator("[data-role=welcome]")).to_be_hidden()
    expect(page.locator("[data-role=delete-conversation]")).to_be_visible()
    page.screenshot(path=str(artifacts / "home-answered-1440-light.png"))

    # Reload: the conversation's own page, stored.
    page.reload()
    expect(page.locator("[data-role=answer]")).to_contain_text("Hello from the home page")
    expect(page.locator("[data-role=welcome]")).to_have_count(0)

    # Back: the home page afresh, a new draft with its own socket (not a snapshot bound to the old one).
    page.go_back()
    expect(page.locator("[data-role=welcome]")).to_be_visible(timeout=30_000)
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    draft = Conversation.objects.get(owner=cast["alice"], messages__isnull=True)
    assert draft.pk != convo.pk
    assert page.locator("#chat").get_attribute("data-conversation") == str(draft.pk)
    expect(page.locator("#messages [data-role=question]")).to_have_count(0)


def test_a_second_message_from_home_starts_a_second_conversation(cast, demo_provider, page_for, artifacts):
    page = open_home(page_for, {"width": 375, "height": 812}, dark=True)
    page.screenshot(path=str(artifacts / "home-375-dark.png"))
    page.fill("#message", "first one")
    page.press("#message", "Enter")
    expect(page.locator("[data-role=answer]")).to_contain_text("first one", timeout=60_000)
    page.screenshot(path=str(artifacts / "home-answered-375-dark.png"))
    page.goto("/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    page.fill("#message", "second one")
    page.press("#message", "Enter")
    expect(page.locator("[data-role=answer]")).to_contain_text("second one", timeout=60_000)
    started = Conversation.objects.filter(owner=cast["alice"], messages__isnull=False).distinct()
    assert started.count() == 2
    assert sorted(Message.objects.filter(role="user").values_list("content", flat=True)) == [
        "first one",
        "second one",
    ]
