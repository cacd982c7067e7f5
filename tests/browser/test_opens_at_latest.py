"""A long conversation opens at its latest exchange, beside the message box, as every chat does: the
page scrolls as a whole, and before, a conversation longer than the screen opened at its first
question with the box thousands of pixels below. An address naming a part of it keeps that part."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Run
from tests.exchanges import answered

pytestmark = pytest.mark.django_db(transaction=True)


def long_conversation(owner) -> tuple[Conversation, list[Run]]:
    return answered(owner, 12, answer=lambda i: f"answer {i}: " + "a rather long line of words " * 40)


def test_a_long_conversation_opens_at_its_latest_exchange_and_the_box(
    cast, demo_provider, page_for, artifacts
):
    convo, runs = long_conversation(cast["alice"])
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    assert page.evaluate("document.documentElement.scrollHeight") > 3 * 900  # longer than the screen
    expect(page.locator("#message")).to_be_in_viewport()
    expect(page.locator(f"#run-{runs[-1].pk} [data-role=answer]")).to_be_in_viewport()
    expect(page.locator(f"#run-{runs[0].pk}")).not_to_be_in_viewport()
    page.screenshot(path=str(artifacts / "long-conversation-opened-1440-light.png"))


def test_an_address_naming_an_exchange_opens_there(cast, demo_provider, page_for):
    convo, runs = long_conversation(cast["alice"])
    page = page_for("alice", "alice-pass", {"width": 375, "height": 812})
    page.goto(f"/c/{convo.pk}/#run-{runs[1].pk}")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    expect(page.locator(f"#run-{runs[1].pk}")).to_be_in_viewport()
    expect(page.locator("#message")).not_to_be_in_viewport()


def test_at_the_bottom_the_page_follows_the_question_and_its_answer(cast, demo_provider, page_for):
    # Chromium's scroll anchoring does this (measured: the box stays put as the exchange grows above it);
    # the test keeps it so (an `overflow-anchor: none` or a scroll of our own would break it).
    convo, runs = long_conversation(cast["alice"])
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    page.fill("#message", "tell me more " * 30)
    page.press("#message", "Enter")
    page.evaluate("document.activeElement.blur()")  # focus elsewhere, as after a click on the page
    answer = page.locator("#messages [data-run]").last.locator("[data-role=answer]")
    expect(answer).to_contain_text("tell me more", timeout=60_000)
    expect(page.locator("#message")).to_be_in_viewport()  # the box did not slide below the screen
    expect(answer).to_be_in_viewport()


def test_scrolled_up_to_read_the_page_stays_while_an_answer_streams(cast, demo_provider, page_for):
    convo, runs = long_conversation(cast["alice"])
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    # Up to the first exchange; resolved once the page has handled the scroll.
    page.evaluate(
        "() => new Promise(done => { addEventListener('scroll', () => requestAnimationFrame(done), {once: true});"
        " scrollTo(0, 0); })"
    )
    # A question sent from elsewhere (another tab): its exchange arrives on this page through the socket.
    token = page.evaluate("() => JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken']")
    sent = page.request.post(
        f"/c/{convo.pk}/send/",
        form={"message": "from another tab"},
        headers={"X-CSRFToken": token, "HX-Request": "true", "HX-Current-URL": page.url},
    )
    assert sent.status == 200
    run = Run.objects.exclude(pk__in=[r.pk for r in runs]).get(conversation=convo)
    expect(page.locator(f"#run-{run.pk} [data-role=answer]")).to_contain_text(
        "from another tab", timeout=60_000
    )
    assert page.evaluate("scrollY") == 0


def test_answers_off_screen_are_not_laid_out_until_they_come_near(cast, demo_provider, page_for):
    # content-visibility: a long conversation of real answers opened ~40 % sooner (docs/performance.md,
    # session 26). Off screen, an answer keeps its place (the server's estimate of its height) and its
    # text: the page's find and the accessibility tree still reach it.
    convo, runs = long_conversation(cast["alice"])
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    drawn = "sel => document.querySelector(sel).checkVisibility({contentVisibilityAuto: true})"
    first, last = f"#run-{runs[0].pk} [data-role=answer]", f"#run-{runs[-1].pk} [data-role=answer]"
    assert page.evaluate(drawn, last) is True
    assert page.evaluate(drawn, first) is False, "an answer far above the screen was laid out"
    assert "answer 0:" in page.locator(first).text_content()
    page.evaluate(
        "() => new Promise(done => { addEventListener('scroll', () => requestAnimationFrame(() =>"
        " requestAnimationFrame(done)), {once: true}); scrollTo(0, 0); })"
    )
    expect(page.locator(first)).to_be_in_viewport()
    assert page.evaluate(drawn, first) is True


def test_scrolled_to_the_top_the_earlier_exchanges_come_without_moving_the_page(
    cast, demo_provider, page_for, artifacts
):
    # The page opens with the latest 30 exchanges (CLEARLOOP_PAGE_EXCHANGES): its cost no longer grows
    # with the conversation (docs/performance.md, session 26). The rest come as the person scrolls up.
    convo, runs = answered(cast["alice"], 40, answer=lambda i: f"answer {i}")
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.goto(f"/c/{convo.pk}/")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    expect(page.locator("#messages > article.assistant")).to_have_count(30)
    expect(page.locator(f"#run-{runs[9].pk}")).to_have_count(0)
    first_shown = page.locator(f"#run-{runs[10].pk}")
    page.evaluate("scrollTo(0, 0)")
    expect(page.locator(f"#run-{runs[9].pk}")).to_have_count(1, timeout=30_000)
    expect(page.locator("#messages > article.assistant")).to_have_count(40)
    expect(page.locator("#earlier")).to_have_count(0)  # nothing earlier left
    # The exchanges came in above: what was on screen stayed there (scroll anchoring), not pushed down.
    expect(first_shown).to_be_in_viewport()
    assert page.locator(f"#run-{runs[0].pk} [data-role=answer]").text_content().strip() == "answer 0"
    page.screenshot(path=str(artifacts / "earlier-exchanges-1440-light.png"))


def test_an_address_naming_an_exchange_not_brought_yet_opens_there(cast, demo_provider, page_for):
    convo, runs = answered(cast["alice"], 40, answer=lambda i: f"answer {i}")
    page = page_for("alice", "alice-pass", {"width": 375, "height": 812})
    page.goto(f"/c/{convo.pk}/#run-{runs[2].pk}")
    expect(page.locator("#ws-state")).to_have_attribute("data-state", "live", timeout=30_000)
    assert f"since={runs[2].pk}" in page.url
    expect(page.locator(f"#run-{runs[2].pk}")).to_be_in_viewport()
    expect(page.locator("#earlier")).to_have_count(1)  # the two before it are still to come
