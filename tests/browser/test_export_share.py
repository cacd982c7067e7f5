"""The issue's whole walk in a browser: upload a CSV, the demo model reads it and writes report.md,
download it, edit the question for a second branch and switch, export both formats (parsed back),
share with the auditor, who sees the snapshot, and is refused after the link is revoked."""

from __future__ import annotations

import json

import pytest

from chatapp.models import Conversation, Run, ShareLink
from chatapp.workspaces import workspace_path
from tests.browser.pages import new_conversation

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
            page.screenshot(path=str(artifacts / f"share-{name}-{label}-{scheme}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.emulate_media(color_scheme="light")


def test_upload_analyse_download_branch_export_and_share(demo_provider, cast, page_for, artifacts):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
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
    assert {m["content"] for m in document["messages"]} >= {"Only the south, please"}
    with page.expect_download() as info:
        page.click("[data-role=export-md]")
    markdown = open(info.value.path(), encoding="utf-8").read()
    assert "## Branch 1 (shown)" in markdown and "## Branch 2" in markdown and "read_file" in markdown
    # Share with the auditor.
    page.click("[data-role=create-share]")
    url = page.locator("[data-role=share-url]").input_value()
    shoot(page, artifacts, "owner")
    auditor = page_for("otto", "otto-pass", viewport={"width": 1440, "height": 900})
    auditor.goto(url)
    assert auditor.locator("[data-role=shared-title]").inner_text().startswith("Analyse sales.csv")
    assert auditor.locator("[data-role=answer]").count() == 1
    shoot(auditor, artifacts, "auditor-view")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("[data-role=revoke-share]")
    page.wait_for_selector("[data-role=revoke-share]", state="detached")
    assert ShareLink.objects.get().revoked_at is not None
    response = auditor.goto(url)
    assert response.status == 410 and auditor.locator("[data-role=revoked]").count() == 1
