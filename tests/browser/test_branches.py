"""Edit → branch → switch in a real browser, with the demo model: its request holds only the active
branch; regenerate puts a sibling answer in place."""

from __future__ import annotations

import json

import pytest

from chatapp.models import Conversation, Round, Run
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def wait_idle(page):
    page.wait_for_selector("#messages [data-role=answer]", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#messages [data-role=stream]')", timeout=60_000)


def shoot(page, artifacts, name):
    for width, label in ((1440, "desktop"), (375, "mobile")):
        page.set_viewport_size({"width": width, "height": 900})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=str(artifacts / f"branches-{name}-{label}-{scheme}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.emulate_media(color_scheme="light")


def sent_text(run: Run) -> str:
    return json.dumps([r.request for r in Round.objects.filter(run=run)], ensure_ascii=False)


def test_edit_branch_switch_and_regenerate(demo_provider, cast, page_for, artifacts):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.fill("#message", "first question about apples")
    page.press("#message", "Enter")
    wait_idle(page)
    page.fill("#message", "second question about pears")
    page.press("#message", "Enter")
    page.wait_for_function("() => document.querySelectorAll('#messages [data-role=answer]').length === 2",
                           timeout=60_000)
    convo = Conversation.objects.get(owner=cast["alice"])
    second = Run.objects.filter(conversation=convo).order_by("id").last()
    # Edit the second question.
    box = page.locator(f".msg.user[data-message='{second.user_message_id}']")
    box.locator("[data-role=edit] > summary").click()
    box.locator("textarea[name=message]").fill("second question about plums")
    with page.expect_navigation():
        box.locator("button:has-text('Send edited')").click()
    page.wait_for_function("() => document.querySelectorAll('#messages [data-role=answer]').length === 2",
                           timeout=60_000)
    edited = Run.objects.filter(conversation=convo).order_by("id").last()
    assert edited.pk != second.pk and edited.user_message.content == "second question about plums"
    request = sent_text(edited)
    assert "first question about apples" in request and "second question about plums" in request
    assert "pears" not in request  # the model sees only the active branch
    position = page.locator(f".msg.user[data-message='{edited.user_message_id}'] [data-role=branch-position]")
    assert position.inner_text() == "2/2"
    shoot(page, artifacts, "edited")
    # Switch back to the original question.
    with page.expect_navigation():
        page.click("[data-role=branch-message] button[aria-label='Previous question']")
    page.wait_for_selector(f".msg.user[data-message='{second.user_message_id}']")
    assert "pears" in page.locator("#messages").inner_text() and "plums" not in page.locator("#messages").inner_text()
    # Regenerate the last answer: a sibling in place, not a copy at the bottom.
    count = page.locator("#messages .msg.user").count()
    with page.expect_navigation():
        page.click(f"#run-{second.pk} [data-role=regenerate]")
    page.wait_for_function("() => document.querySelectorAll('#messages [data-role=answer]').length === 2",
                           timeout=60_000)
    again = Run.objects.filter(conversation=convo).order_by("id").last()
    assert again.user_message_id == second.user_message_id
    assert page.locator("#messages .msg.user").count() == count
    assert page.locator(f"#run-{again.pk} [data-role=branch-run] [data-role=branch-position]").inner_text() == "2/2"
    assert "plums" not in sent_text(again) and "pears" in sent_text(again)
    shoot(page, artifacts, "regenerated")


def test_delete_asks_then_undo_brings_it_back(demo_provider, cast, page_for, artifacts):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    assert page.locator("#conversation-list a").count() == 0  # the draft is not listed
    page.fill("#message", "a conversation to delete")
    page.press("#message", "Enter")
    wait_idle(page)
    assert page.locator("#conversation-list a", has_text="a conversation to delete").count() == 1
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    with page.expect_navigation():
        page.click("[data-role=delete-conversation]")
    assert asked and "You can undo this" in asked[0]
    page.wait_for_selector("[data-role=undo]")
    assert page.locator("#conversation-list a").count() == 0
    assert Conversation.objects.get(owner=cast["alice"]).deleted_at is not None
    shoot(page, artifacts, "deleted-undo")
    with page.expect_navigation():
        page.click("[data-role=undo-delete]")
    page.wait_for_selector("#messages [data-role=answer]")
    assert Conversation.objects.get(owner=cast["alice"]).deleted_at is None
