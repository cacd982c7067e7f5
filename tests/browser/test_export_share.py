"""The issue's whole walk in a browser: upload a CSV, the demo model reads it and writes report.md,
download it, edit the question for a second branch and switch, export both formats (parsed back),
share with the auditor, who sees the snapshot, and is refused after the link is revoked."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from chatapp.models import AuditEvent, Conversation, Run, ShareLink
from chatapp.workspaces import workspace_path
from tests.browser.pages import new_conversation, settle

pytestmark = pytest.mark.django_db(transaction=True)

ASK = "Analyse sales.csv and write me a report"


def answers(page, count):
    page.wait_for_function(
        f"() => document.querySelectorAll('#messages [data-role=answer]').length === {count}"
        " && !document.querySelector('#messages [data-role=stream]')",
        timeout=60_000,
    )


def shoot(page, artifacts, name):
    for width, label in ((1440, "desktop"), (375, "mobile")):
        page.set_viewport_size({"width": width, "height": 900})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            settle(page)
            page.screenshot(path=str(artifacts / f"share-{name}-{label}-{scheme}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.emulate_media(color_scheme="light")


def test_upload_analyse_download_branch_export_and_share(demo_provider, cast, page_for, artifacts):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900},
                    permissions=["clipboard-read", "clipboard-write"])
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.set_input_files("#file-input", files=[
        {"name": "sales.csv", "mimeType": "text/csv", "buffer": b"region,total\nnorth,42\nsouth,7\n"}])
    page.wait_for_selector("[data-role=pending-attachments] li:has-text('sales.csv')")
    page.fill("#message", ASK)
    page.press("#message", "Enter")
    answers(page, 1)
    convo = Conversation.objects.get(owner=cast["alice"])
    first = Run.objects.get(conversation=convo)
    folder = workspace_path(convo.owner_id, convo.pk)
    # The title followed the first message without a reload.
    assert page.input_value("#title-input").startswith("Analyse sales.csv")
    assert page.locator("#conversation-list a", has_text="Analyse sales.csv").count() == 1
    page.locator(f"#run-{first.pk} [data-role=trace] > summary").click()
    with page.expect_download() as info:
        page.locator(f"#run-{first.pk} [data-role=file-link] a:has-text('download')").click()
    downloaded = open(info.value.path(), "rb").read()
    assert downloaded == (folder / "report.md").read_bytes()
    assert b"2 rows, columns: region, total" in downloaded and b"total: sum 49" in downloaded
    assert "wrote the analysis to report.md" in page.locator(f"#run-{first.pk} [data-role=answer]").inner_text()
    # Edit the question: a second branch, then switch back.
    box = page.locator(f".msg.user[data-message='{first.user_message_id}']")
    box.locator("[data-role=edit] > summary").click()
    box.locator("textarea[name=message]").fill("Only the south, please")
    with page.expect_navigation():
        box.locator("button:has-text('Send edited')").click()
    answers(page, 1)
    assert "Only the south" in page.locator("#messages").inner_text()
    assert page.locator(".msg.user [data-role=attachments]").inner_text().startswith("sales.csv")  # kept
    with page.expect_navigation():
        page.click("[data-role=branch-message] button[aria-label='Previous question']")
    answers(page, 1)
    assert "Analyse sales.csv" in page.locator("#messages").inner_text()
    # Export both formats and parse them back.
    page.click("[data-role=share-details] > summary")
    page.wait_for_selector("[data-role=export-json]")
    with page.expect_download() as info:
        page.click("[data-role=export-json]")
    document = json.loads(open(info.value.path(), encoding="utf-8").read())
    assert len(document["branches"]) == 2
    assert {m["content"] for m in document["messages"]} >= {ASK, "Only the south, please"}
    runs = {r["run_id"]: r for r in document["runs"]}
    calls = {c["name"]: c for c in runs[first.pk]["tool_calls"]}
    assert json.loads(calls["read_file"]["arguments"])["path"] == "sales.csv"
    assert "north,42" in calls["read_file"]["result"] and "report.md" in calls["write_file"]["arguments"]
    for branch in document["branches"]:
        (run_id,) = branch["run_ids"]
        assert branch["usage"]["total_tokens"] == runs[run_id]["usage"]["total_tokens"] > 0
        assert branch["cost"]["priced_rounds"] + branch["cost"]["unpriced_rounds"] == len(runs[run_id]["rounds"])
    assert [b["active"] for b in document["branches"]] == [True, False]  # the first question is on screen
    with page.expect_download() as info:
        page.click("[data-role=export-md]")
    markdown = open(info.value.path(), encoding="utf-8").read()
    assert "## Branch 1 (shown)" in markdown and "## Branch 2" in markdown and "read_file" in markdown
    assert markdown.count(f"### You\n\n{ASK}") == 1 and "### You\n\nOnly the south, please" in markdown
    assert "north,42" in markdown  # the read_file result
    # Share with the auditor.
    page.click("[data-role=create-share]")
    page.click("[data-role=copy-share]")  # what the owner sends the auditor
    expect(page.locator("[data-role=copy-share]")).to_have_text("Copied")
    url = page.evaluate("navigator.clipboard.readText()")
    assert url == page.locator("[data-role=share-url]").input_value() and "/s/" in url
    shoot(page, artifacts, "owner")
    # Later changes stay out of the snapshot: a new message after sharing.
    page.fill("#message", "A question after sharing")
    page.press("#message", "Enter")
    answers(page, 2)
    auditor = page_for("otto", "otto-pass", viewport={"width": 1440, "height": 900})
    bob = page_for("bob", "bob-pass", viewport={"width": 1440, "height": 900})  # no rights of his own
    for reader in (auditor, bob):
        assert reader.goto(url).status == 200
        assert reader.locator("[data-role=shared-title]").inner_text().startswith("Analyse sales.csv")
        assert reader.locator("[data-role=answer]").count() == 1
        assert "after sharing" not in reader.locator(".messages").inner_text()
        reader.locator("[data-role=trace] > summary").click()  # with its trace
        trace = reader.locator("[data-role=trace]").inner_text()
        assert "read_file" in trace and "write_file" in trace and "north,42" in trace
        assert reader.locator("[data-role=edit], [data-role=regenerate], #composer").count() == 0  # read-only
    shoot(auditor, artifacts, "auditor-view")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("[data-role=revoke-share]")
    page.wait_for_selector("[data-role=revoke-share]", state="detached")
    assert ShareLink.objects.get().revoked_at is not None
    for reader in (auditor, bob):
        response = reader.goto(url)
        assert response.status == 410 and reader.locator("[data-role=revoked]").count() == 1
        assert "north,42" not in reader.content()
    kinds = list(AuditEvent.objects.filter(kind__in=("export", "share_created", "share_revoked"))
                 .order_by("seq").values_list("kind", flat=True))
    assert kinds == ["export", "export", "share_created", "share_revoked"]
    shoot(bob, artifacts, "revoked")


def test_branch_switches_share_panel_and_shared_page_pass_axe(demo_provider, cast, page_for, artifacts):
    """WCAG AA (axe-core, tests/browser/axe_check.py) where issue 11 added controls: ‹ 2/2 › on a
    question, the Export and share panel with a link, the shared snapshot with its trace open."""
    from tests.browser.test_accessibility import check

    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900}, bypass_csp=True)
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.fill("#message", "What is a branch?")
    page.press("#message", "Enter")
    answers(page, 1)
    question = Run.objects.get(conversation__owner=cast["alice"]).user_message_id
    box = page.locator(f".msg.user[data-message='{question}']")
    box.locator("[data-role=edit] > summary").click()
    box.locator("textarea[name=message]").fill("What is a branch, briefly?")
    with page.expect_navigation():
        box.locator("button:has-text('Send edited')").click()
    answers(page, 1)
    page.click("[data-role=share-details] > summary")
    page.click("[data-role=create-share]")
    url = page.locator("[data-role=share-url]").input_value()
    found: dict = {}
    check(page, "share-panel", artifacts, found)
    reader = page_for("otto", "otto-pass", viewport={"width": 1440, "height": 900}, bypass_csp=True)
    reader.goto(url)
    reader.locator("[data-role=trace] > summary").click()
    check(reader, "shared-snapshot", artifacts, found)
    assert not found, found
