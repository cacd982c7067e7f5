"""The question is on the page the moment Send is pressed, marked as being sent, and gives way to the
server's copy when the send's answer lands; a refused or failed send takes it away again and leaves
the text in the box. The send's request is held in the browser (Playwright's routing) so that what
the page shows before the server has the message is checked, not raced: without the pending
question, nothing of the message is on the page until the answer comes (bench/page)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message, Run
from tests.browser.test_errors_in_place import busy_conversation

pytestmark = pytest.mark.django_db(transaction=True)

PENDING = "#messages [data-role=pending-question]"
TEXT = "Is <b>this</b> bold?\nsecond line"


def open_held(page_for, convo: Conversation, viewport: dict | None = None, dark: bool = False):
    """The conversation's page with every send held until the test lets it go."""
    page = page_for("alice", "alice-pass", viewport)
    if dark:
        page.emulate_media(color_scheme="dark")
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    held: list = []
    page.route("**/send/", lambda route: held.append(route))
    return page, held


def press_send(page, held: list, text: str) -> None:
    page.fill("#message", text)
    page.click("#composer button[type=submit]")
    expect(page.locator(PENDING)).to_have_count(1)
    assert held, "the send was not made"


def test_the_question_shows_at_once_and_gives_way_to_the_servers_copy(
    cast, demo_provider, page_for, artifacts
):
    convo = Conversation.objects.create(owner=cast["alice"], title="pending")
    page, held = open_held(page_for, convo, {"width": 1440, "height": 900})
    press_send(page, held, TEXT)
    pending = page.locator(PENDING)
    expect(pending).to_contain_text("Sending…")
    # Text, never markup, and the lines as typed.
    assert pending.locator(".body").inner_text() == TEXT
    assert pending.locator("b").count() == 0
    assert pending.get_attribute("aria-busy") == "true"
    assert not Run.objects.filter(conversation=convo).exists()  # the server has nothing yet
    page.screenshot(path=str(artifacts / "pending-question-1440-light.png"))

    held[0].continue_()
    expect(page.locator(PENDING)).to_have_count(0, timeout=30_000)
    questions = page.locator("#messages [data-role=question]")
    expect(questions).to_have_count(1)
    expect(questions).to_contain_text("Is <b>this</b> bold?")
    expect(page.locator("[data-role=answer]")).to_be_visible(timeout=60_000)
    assert page.input_value("#message") == ""
    assert Message.objects.filter(conversation=convo, role="user").count() == 1


def test_a_refused_send_takes_its_question_away_and_keeps_the_text(cast, demo_provider, page_for, artifacts):
    convo = busy_conversation(cast["alice"])
    page, held = open_held(page_for, convo, {"width": 375, "height": 812}, dark=True)
    press_send(page, held, "second question")
    page.screenshot(path=str(artifacts / "pending-question-375-dark.png"))
    held[0].continue_()
    expect(page.locator("#send-error")).to_contain_text("still answering", timeout=15_000)
    expect(page.locator(PENDING)).to_have_count(0)
    assert page.input_value("#message") == "second question"
    assert Run.objects.filter(conversation=convo).count() == 1


def test_a_send_that_never_reaches_the_server_takes_its_question_away(cast, demo_provider, page_for):
    convo = Conversation.objects.create(owner=cast["alice"], title="unreachable")
    page, held = open_held(page_for, convo)
    press_send(page, held, "anyone there?")
    held[0].abort("connectionrefused")
    expect(page.locator("#send-error")).to_contain_text("could not be reached", timeout=15_000)
    expect(page.locator(PENDING)).to_have_count(0)
    assert page.input_value("#message") == "anyone there?"
    assert not Run.objects.filter(conversation=convo).exists()


def test_a_first_message_from_the_home_page_shows_at_once_in_place_of_the_greeting(
    cast, demo_provider, page_for
):
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.goto("/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    held: list = []
    page.route("**/send/", lambda route: held.append(route))
    welcome = page.locator("[data-role=welcome]")
    expect(welcome).to_be_visible()
    press_send(page, held, "hello from the home page")
    expect(page.locator(PENDING)).to_contain_text("hello from the home page")
    expect(welcome).to_be_hidden()  # the question takes the greeting's place at once
    assert not Message.objects.filter(conversation__owner=cast["alice"]).exists()
    held[0].continue_()
    expect(page.locator("#messages [data-role=question]")).to_have_text("hello from the home page")
    expect(page.locator(PENDING)).to_have_count(0)


def test_a_refused_first_message_gives_the_greeting_back_and_keeps_the_text(cast, demo_provider, page_for):
    page = page_for("alice", "alice-pass")
    page.goto("/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    long_text = "x" * 120_000
    held: list = []
    page.route("**/send/", lambda route: held.append(route))
    press_send(page, held, long_text)
    expect(page.locator("[data-role=welcome]")).to_be_hidden()
    held[0].continue_()
    expect(page.locator("#send-error")).to_contain_text("the limit is 100,000 bytes", timeout=15_000)
    expect(page.locator(PENDING)).to_have_count(0)
    expect(page.locator("[data-role=welcome]")).to_be_visible()
    assert page.input_value("#message") == long_text
    assert page.url.endswith("/")  # nothing was started: the address stays the home page's
    assert not Run.objects.filter(conversation__owner=cast["alice"]).exists()
