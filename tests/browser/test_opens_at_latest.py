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
