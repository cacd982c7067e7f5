"""Edit → branch → switch in a real browser, with the demo model: its request holds only the active
branch; regenerate puts a sibling answer in place."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from chatapp.models import AuditEvent, Conversation, Round, Run
from chatapp.services.quotas import usage_report
from tests.browser.pages import new_conversation, settle

pytestmark = pytest.mark.django_db(transaction=True)


def wait_idle(page):
    page.wait_for_selector("#messages [data-role=answer]", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#messages [data-role=stream]')", timeout=60_000)


def shoot(page, artifacts, name):
    for width, label in ((1440, "desktop"), (375, "mobile")):
        page.set_viewport_size({"width": width, "height": 900})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            settle(page)
            page.screenshot(path=str(artifacts / f"branches-{name}-{label}-{scheme}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.emulate_media(color_scheme="light")


def sent_text(run: Run) -> str:
    return json.dumps([r.request for r in Round.objects.filter(run=run)], ensure_ascii=False)


HISTORY = " [[demo:history]]"  # the demo model answers with the questions its request held


def heard(page, run: Run) -> str:
    """What the model says it was sent, read off the page: "The questions I was sent: q1 | q2"."""
    text = page.locator(f"#run-{run.pk} [data-role=answer]").inner_text()
    assert text.startswith("The questions I was sent: "), text
    return text.removeprefix("The questions I was sent: ")


def latest(convo: Conversation) -> Run:
    return Run.objects.filter(conversation=convo).order_by("id").last()


def edit(page, message_id: int, text: str) -> None:
    box = page.locator(f".msg.user[data-message='{message_id}']")
    box.locator("[data-role=edit] > summary").click()
    box.locator("textarea[name=message]").fill(text)
    with page.expect_navigation():
        box.locator("button:has-text('Send edited')").click()
    answers(page, 2)


def answers(page, count: int) -> None:
    page.wait_for_function(
        f"() => document.querySelectorAll('#messages [data-role=answer]').length === {count}"
        " && !document.querySelector('#messages [data-role=stream]')",
        timeout=60_000,
    )


def switch_question(page, direction: str) -> None:
    with page.expect_navigation():
        page.click(f"[data-role=branch-message] button[aria-label='{direction} question']")
    answers(page, 2)


def test_edit_branch_switch_and_regenerate(demo_provider, cast, page_for, artifacts):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.fill("#message", "first question about apples" + HISTORY)
    page.press("#message", "Enter")
    wait_idle(page)
    page.fill("#message", "second question about pears" + HISTORY)
    page.press("#message", "Enter")
    answers(page, 2)
    convo = Conversation.objects.get(owner=cast["alice"])
    second = latest(convo)
    assert heard(page, second) == "first question about apples | second question about pears"
    # Edit the second question twice: three sibling questions, the last one shown.
    edit(page, second.user_message_id, "second question about plums" + HISTORY)
    plums = latest(convo)
    assert plums.pk != second.pk and plums.user_message.content == "second question about plums" + HISTORY
    # What the model was sent, in its own words (the demo model read its HTTP request) and as stored.
    assert heard(page, plums) == "first question about apples | second question about plums"
    request = sent_text(plums)
    assert "first question about apples" in request and "second question about plums" in request
    assert "pears" not in request  # the model sees only the active branch
    edit(page, plums.user_message_id, "second question about cherries" + HISTORY)
    cherries = latest(convo)
    assert heard(page, cherries) == "first question about apples | second question about cherries"
    switch = page.locator(f".msg.user[data-message='{cherries.user_message_id}'] [data-role=branch-message]")
    assert " ".join(switch.inner_text().split()) == "‹ 3/3 ›"
    shoot(page, artifacts, "edited")
    # ‹ goes one question back, in place: the same place in the page, the branch below it follows.
    switch_question(page, "Previous")
    switch = page.locator(f".msg.user[data-message='{plums.user_message_id}'] [data-role=branch-message]")
    assert " ".join(switch.inner_text().split()) == "‹ 2/3 ›"
    assert heard(page, plums) == "first question about apples | second question about plums"
    assert "cherries" not in page.locator("#messages").inner_text()
    shoot(page, artifacts, "switched")
    switch_question(page, "Previous")
    assert "pears" in page.locator("#messages").inner_text() and "plums" not in page.locator("#messages").inner_text()
    switch_question(page, "Next")
    assert heard(page, plums).endswith("plums")
    switch_question(page, "Previous")
    # Regenerate the last answer: a sibling in place, not a copy at the bottom.
    count = page.locator("#messages .msg.user").count()
    with page.expect_navigation():
        page.click(f"#run-{second.pk} [data-role=regenerate]")
    answers(page, 2)
    again = latest(convo)
    assert again.user_message_id == second.user_message_id
    assert page.locator("#messages .msg.user").count() == count
    assert page.locator(f"#run-{again.pk} [data-role=branch-run] [data-role=branch-position]").inner_text() == "2/2"
    assert heard(page, again) == "first question about apples | second question about pears"
    assert "plums" not in sent_text(again) and "pears" in sent_text(again)
    assert page.locator(f"#run-{second.pk}").count() == 0  # the first answer is behind ‹, not below
    shoot(page, artifacts, "regenerated")
    # Switching while an answer streams is refused, and the page says why.
    page.fill("#message", "tell me a long story [[demo:slow]]")  # the demo model writes 4 tokens a second
    page.press("#message", "Enter")
    stop = page.locator("[data-run] .actions button.stop")
    stop.wait_for(timeout=30_000)
    streaming = latest(convo)
    page.locator(f"#run-{streaming.pk}").filter(has_text="Hello").wait_for(timeout=30_000)  # streamed text shown
    expect(page.locator(f"#run-{streaming.pk} [data-role=status]")).to_have_text("Running")  # not "Queued"
    page.click(f"#run-{again.pk} [data-role=branch-run] button[aria-label='Previous answer']")
    page.wait_for_function(
        "() => document.querySelector('#send-error').innerText.includes('still answering')", timeout=10_000
    )
    assert "switch branches" in page.locator("#send-error").inner_text()
    streaming.refresh_from_db()
    assert streaming.is_active and Conversation.objects.get(pk=convo.pk).active_run_id == streaming.pk
    shoot(page, artifacts, "switch-refused")
    stop.click()
    expect(page.locator(f"#run-{streaming.pk} [data-role=status]")).to_have_text("Cancelled", timeout=30_000)
    # Regenerate an older answer: the new one takes its place at the top, the later exchanges stay on
    # the other branch (the first version of clearloop appended a copy of the question at the bottom).
    oldest = Run.objects.filter(conversation=convo).order_by("id").first()
    with page.expect_navigation():
        page.click(f"#run-{oldest.pk} [data-role=regenerate]")
    answers(page, 1)
    renewed = latest(convo)
    assert renewed.user_message_id == oldest.user_message_id
    assert page.locator("#messages .msg.user").count() == 1
    assert heard(page, renewed) == "first question about apples"
    assert " ".join(page.locator(f"#run-{renewed.pk} [data-role=branch-run]").inner_text().split()) == "‹ 2/2 ›"
    # Nothing is lost: every branch keeps its run, trace, usage and audit events.
    runs = list(Run.objects.filter(conversation=convo).order_by("id"))
    assert len(runs) == 7
    created = set(AuditEvent.objects.filter(kind="run_created").values_list("run_id", flat=True))
    assert created == {r.pk for r in runs}
    finished = {r.pk for r in runs if r.status == "succeeded"}
    assert finished == {r.pk for r in runs} - {streaming.pk}
    assert set(AuditEvent.objects.filter(kind="round_stored").values_list("run_id", flat=True)) >= finished
    spent = sum((r.usage or {}).get("prompt_tokens", 0) + (r.usage or {}).get("completion_tokens", 0)
                for r in Round.objects.filter(run__conversation=convo))
    assert spent > 0
    assert [row.tokens_month for row in usage_report() if row.kind == "user" and row.name == "alice"] == [spent]
    for hidden in (second, plums, cherries):  # not on screen now, still there for the owner and auditors
        fragment = page.request.get(f"/runs/{hidden.pk}/fragment/")
        assert fragment.status == 200 and "data-role=\"trace\"" in fragment.text()
        assert "The questions I was sent" in fragment.text()
    auditor = page_for("otto", "otto-pass")
    for run in runs:
        assert auditor.request.get(f"/audit/runs/{run.pk}/").status == 200


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
    assert Conversation.objects.get(owner=cast["alice"], title="a conversation to delete").deleted_at is not None
    shoot(page, artifacts, "deleted-undo")
    with page.expect_navigation():
        page.click("[data-role=undo-delete]")
    page.wait_for_selector("#messages [data-role=answer]")
    assert Conversation.objects.get(owner=cast["alice"], title="a conversation to delete").deleted_at is None
