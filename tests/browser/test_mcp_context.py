"""MCP resources attached as context and MCP prompts expanded into the message box (R-MCP-7)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Run
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def test_attach_a_resource_and_use_a_prompt(cast, demo_tools, page_for):
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.click("text=MCP resources and prompts")
    attach = page.locator("form:has(code:text-is('demo://watchlist')) button")
    attach.wait_for(timeout=60_000)
    attach.click()
    page.locator("#attached .chip:has-text('demo://watchlist')").wait_for()
    convo = Conversation.objects.get(owner=cast["alice"])
    assert convo.attached_context[0]["uri"] == "demo://watchlist"
    assert "600519" in convo.attached_context[0]["text"]

    prompt = page.locator("form:has(strong:text-is('market_briefing'))")
    prompt.locator("input[name='arg:symbols']").fill("AAPL, MSFT")
    prompt.locator("button").click()
    expect(page.locator("#message")).to_have_value(re.compile("AAPL, MSFT"), timeout=60_000)
    assert "market briefing" in page.input_value("#message")
    page.press("#message", "Enter")  # Enter still sends from the replaced textarea
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    run = Run.objects.get(conversation=convo)
    sent = json.dumps(run.rounds.first().request, ensure_ascii=False)
    assert "demo://watchlist" in sent and "600519" in sent  # the attached resource reached the model
    assert "AAPL, MSFT" in run.user_message.content
