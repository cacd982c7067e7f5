"""Keyboard: shortcuts for a new conversation, the message box and Stop, listed in a help that "?"
opens; focus is always visible (a 2 px ring on what the keyboard reached)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chatapp.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


def test_shortcuts_start_a_conversation_focus_the_box_and_stop_the_answer(cast, demo_provider, page_for, artifacts):
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.locator("body").click(position={"x": 5, "y": 300})  # nothing focused: a person reading the page
    page.keyboard.press("?")
    help_list = page.locator("[data-role=shortcuts] dl")
    expect(help_list).to_be_visible()
    expect(help_list).to_contain_text("New conversation")
    expect(help_list).to_contain_text("Stop the answer being written")
    page.screenshot(path=str(artifacts / "shortcuts-help-1440-light.png"))
    page.keyboard.press("Escape")
    expect(help_list).to_be_hidden()

    page.keyboard.press("Alt+Shift+N")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.wait_for_load_state("load")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("/")
    expect(page.locator("#message")).to_be_focused()

    page.keyboard.type("tell me a long story [[demo:slow]]")  # the demo model writes 4 tokens a second
    page.keyboard.press("Enter")
    stop = page.locator("[data-run] .actions button.stop")
    expect(stop).to_be_visible(timeout=30_000)
    page.keyboard.press("Alt+Shift+S")  # works while the focus is still in the message box
    run = Run.objects.get(conversation__owner=cast["alice"])
    expect(page.locator(f"#run-{run.pk} [data-role=status]")).to_have_text("Cancelled", timeout=30_000)
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_focus_is_visible_on_what_the_keyboard_reaches(cast, demo_provider, page_for):
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    page.evaluate("document.activeElement.blur()")  # from the top of the page: header, list, box
    rings = []
    for _ in range(12):
        page.keyboard.press("Tab")
        rings.append(
            page.evaluate(
                """() => { const el = document.activeElement; const s = getComputedStyle(el);
                return [el.tagName, s.outlineStyle, parseFloat(s.outlineWidth)]; }"""
            )
        )
    reached = [r for r in rings if r[0] != "BODY"]  # past the last element the browser's own UI has it
    assert len({tag for tag, _s, _w in reached}) >= 3, rings  # links, buttons, fields
    assert all(style != "none" and width >= 2 for _tag, style, width in reached), rings
