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
    expect(page.locator("#composer button[type=submit]")).to_be_in_viewport(ratio=1)  # Send, no scrolling
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


# Every frame a page's sockets receive, recorded before the page's own listeners run (an init script).
RECORD_FRAMES = """
(() => {
  window.__frames = [];
  const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    socket.addEventListener("message", (event) => window.__frames.push(String(event.data)));
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
})();
"""


def test_two_home_tabs_each_start_their_own_conversation(cast, demo_provider, page_for):
    tab_a = open_home(page_for)
    tab_b = tab_a.context.new_page()
    tab_b.add_init_script(RECORD_FRAMES)
    tab_b.goto("/")
    expect(tab_b.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    draft = tab_a.locator("#chat").get_attribute("data-conversation")
    assert tab_b.locator("#chat").get_attribute("data-conversation") == draft  # one draft, two tabs

    tab_a.fill("#message", "from tab A")
    tab_a.press("#message", "Enter")
    expect(tab_a.locator("[data-role=answer]")).to_contain_text("from tab A", timeout=60_000)
    # Tab B's socket follows the same conversation and hears the whole run (the page's listeners ran
    # on each frame before this sees it); its page shows none of it and stays a fresh start.
    tab_b.wait_for_function("() => window.__frames.some(f => f.includes('\"run_finished\"'))", timeout=60_000)
    expect(tab_b.locator("#messages > article")).to_have_count(0)
    expect(tab_b.locator("[data-role=welcome]")).to_be_visible()

    tab_b.fill("#message", "from tab B")
    tab_b.press("#message", "Enter")
    tab_b.wait_for_url("**/c/*/")
    expect(tab_b.locator("[data-role=answer]")).to_contain_text("from tab B", timeout=60_000)
    assert tab_b.locator("#chat").get_attribute("data-conversation") != draft
    questions = sorted(Message.objects.filter(role="user").values_list("conversation_id", "content"))
    assert [c for _, c in questions] == ["from tab A", "from tab B"] and questions[0][0] != questions[1][0]
