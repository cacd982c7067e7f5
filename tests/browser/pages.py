"""Steps a person takes on the chat page, shared by the browser tests."""

from __future__ import annotations

import re


def new_conversation(page) -> None:
    """Start a new conversation as a person would, and wait until its page is ready for typing.

    On a phone the button is in the conversation drawer. The wait matters: an Enter pressed before
    chat.js has bound the message box only adds a new line (nothing is sent)."""
    toggle = page.locator("[data-role=drawer-toggle]")
    if toggle.is_visible():
        toggle.click()
    page.locator("form[action$='/c/new/'] button[type=submit]").click()
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.wait_for_load_state("load")


def settle(page) -> None:
    """Wait for running CSS transitions and animations (a resize slides the phone's drawer away), so a
    screenshot shows the page at rest, not half-way through one."""
    page.evaluate("() => Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)))")
