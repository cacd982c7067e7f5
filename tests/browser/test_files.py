"""Files in and out of the workspace, in a real browser: upload by button and by drop, the demo model
reading the upload, report.md written by the seed scenario appearing live and downloaded byte for byte,
and the whole workspace as a zip."""

from __future__ import annotations

import io
import json
import time
import zipfile

import pytest
from playwright.sync_api import expect

from chatapp.models import AuditEvent, Conversation, Message, Run, ToolCall
from chatapp.workspaces import workspace_path
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)

SCENARIO = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"

PASTE = """
([selector, files]) => {
  const data = new DataTransfer();
  for (const [name, text] of files) data.items.add(new File([text], name, {type: "text/plain"}));
  document.querySelector(selector).dispatchEvent(
    new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
}
"""

DROP = """
([selector, name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, {type: "text/plain"}));
  const target = document.querySelector(selector);
  target.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true, cancelable: true}));
  target.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
}
"""


def shoot(page, artifacts, name):
    for width, label in ((1440, "desktop"), (375, "mobile")):
        page.set_viewport_size({"width": width, "height": 900})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=str(artifacts / f"files-{name}-{label}-{scheme}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.emulate_media(color_scheme="light")


def test_upload_by_button_and_drop_then_the_model_reads_it(demo_tools, cast, page_for, artifacts):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.set_input_files("#file-input", files=[
        {"name": "sales.csv", "mimeType": "text/csv", "buffer": b"region,total\nnorth,42\nsouth,7\n"},
    ])
    page.wait_for_selector("[data-role=pending-attachments] li:has-text('sales.csv')")
    page.evaluate(DROP, ["#composer", "notes.txt", "dropped text"])
    page.wait_for_selector("[data-role=pending-attachments] li:has-text('notes.txt')")
    # Two files pasted into the message box at once; the second copy of notes.txt is renamed, the first kept.
    page.evaluate(PASTE, ["#message", [["pasted.md", "# pasted"], ["notes.txt", "second notes"]]])
    page.wait_for_selector("text=2 files uploaded")
    page.wait_for_selector("[data-role=pending-attachments] li:has-text('notes (2).txt (renamed)')")
    page.click("summary:has-text('Workspace files')")
    page.wait_for_selector("#files-panel tr[data-file='sales.csv']")
    page.wait_for_selector("#files-panel tr[data-file='pasted.md']")
    shoot(page, artifacts, "attached")
    # On a phone the panel is under ⚙ and its Modified and Written-by columns are hidden: who wrote a
    # file shows under its name instead, and nothing runs off the screen.
    page.set_viewport_size({"width": 375, "height": 812})
    page.click("[data-role=options-toggle]")
    origin = page.locator("#files-panel tr[data-file='sales.csv'] [data-role=origin-narrow]")
    expect(origin).to_be_visible()
    expect(origin).to_have_text("uploaded by you")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 376
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(artifacts / f"files-panel-phone-{scheme}.png"))
    page.emulate_media(color_scheme="light")
    page.click("[data-role=options-toggle]")
    page.set_viewport_size({"width": 1440, "height": 900})
    expect(origin).to_be_hidden()  # its own column shows it on a wide screen
    page.fill("#message", 'Analyse it [[demo:call read_file {"path": "sales.csv"}]]')
    page.press("#message", "Enter")
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    convo = Conversation.objects.get(owner=cast["alice"])
    message = Message.objects.get(conversation=convo, role="user")
    assert sorted(message.uploads.values_list("name", flat=True)) == ["notes (2).txt", "notes.txt", "pasted.md",
                                                                      "sales.csv"]
    folder = workspace_path(convo.owner_id, convo.pk)
    assert (folder / "notes.txt").read_text() == "dropped text" and (folder / "notes (2).txt").read_text() == "second notes"
    assert "sales.csv" in message.payload["content"]  # named to the model
    call = ToolCall.objects.get(run__conversation=convo, name="read_file")
    assert call.status == "succeeded" and "north,42" in call.result
    assert page.locator(".msg.user [data-role=attachments] li").count() == 4
    shoot(page, artifacts, "sent-with-attachments")
    assert AuditEvent.objects.filter(kind="file_uploaded").count() == 4


def test_a_change_announced_while_the_panel_settles_still_refreshes_it(demo_tools, cast, page_for):
    """htmx processes swapped-in content only after its settle delay (20 ms). The panel listened for
    "files-changed" itself and was swapped whole, so a change announced in that window (an upload
    finishing just after another one's refresh) reached no listener and the new file was never listed
    (seen as a flaky miss of pasted.md above). The panel's host listens now: both asks are sent."""
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.click("summary:has-text('Workspace files')")
    page.wait_for_selector("#files-panel")
    page.evaluate("""() => {
      window.panelAsks = 0;
      document.body.addEventListener("htmx:beforeRequest", (e) => {
        if (/\\/files\\/$/.test(e.detail.pathInfo.requestPath)) window.panelAsks += 1;
      });
      document.body.addEventListener("htmx:afterSwap", () => {
        htmx.trigger(document.body, "files-changed");  // inside the settle window of the first swap
      }, {once: true});
      htmx.trigger(document.body, "files-changed");
    }""")
    deadline = time.monotonic() + 10
    while page.evaluate("window.panelAsks") < 2 and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # polling the page's counter against a deadline, not a fixed wait
    assert page.evaluate("window.panelAsks") == 2
    page.wait_for_selector("#files-panel")


def test_two_changes_announced_at_once_are_both_asked_and_none_is_aborted(demo_tools, cast, page_for):
    """A run that writes a file announces it twice within moments (its write_file call, then its end).
    The second ask waits for the first (hx-sync "queue last"); replacing it aborted the first, which
    left a red htmx:sendAbort in the console of most such runs (seen in the smoke run of session 21)."""
    page = page_for("alice", "alice-pass", viewport={"width": 375, "height": 800})
    new_conversation(page)
    page.evaluate("""() => {
      window.panelDone = 0;
      window.panelAborts = 0;
      document.body.addEventListener("htmx:sendAbort", () => window.panelAborts += 1);
      document.body.addEventListener("htmx:afterRequest", (e) => {
        if (/\\/files\\/$/.test(e.detail.pathInfo.requestPath) && e.detail.successful) window.panelDone += 1;
      });
      htmx.trigger(document.body, "files-changed");
      htmx.trigger(document.body, "files-changed");  // while the first ask is on its way
    }""")
    deadline = time.monotonic() + 10
    while page.evaluate("window.panelDone") < 2 and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # polling the page's counter against a deadline, not a fixed wait
    assert page.evaluate("[window.panelDone, window.panelAborts]") == [2, 0]


def test_report_md_appears_live_and_downloads_byte_for_byte(demo_tools, cast, page_for, artifacts):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.click("summary:has-text('Workspace files')")
    page.wait_for_selector("#files-panel")
    assert page.locator("#files-panel tr[data-file='report.md']").count() == 0
    # The panel is asked to refresh when a write_file call succeeds (while the run goes on) and again
    # when the run ends: count the asks, and note whether the run had ended at the first one.
    page.evaluate("""() => {
      window.panelRefreshes = [];
      document.body.addEventListener("files-changed", () => window.panelRefreshes.push(
        document.querySelector("article.msg.assistant [data-role=answer]") !== null));
    }""")
    page.fill("#message", SCENARIO)
    page.press("#message", "Enter")
    # Live: the row appears without a reload, as soon as write_file succeeded.
    page.wait_for_selector("#files-panel tr[data-file='report.md']", timeout=60_000)
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    refreshes = page.evaluate("window.panelRefreshes")
    assert len(refreshes) >= 2 and refreshes[0] is False, refreshes  # the first came from the tool call
    convo = Conversation.objects.get(owner=cast["alice"])
    run = Run.objects.get(conversation=convo)
    folder = workspace_path(convo.owner_id, convo.pk)
    assert "write_file in the answer to “读取 config.yaml" in page.locator("#files-panel tr[data-file='report.md']").inner_text()
    page.locator(f"#run-{run.pk} [data-role=trace] > summary").click()
    link = page.locator(f"#run-{run.pk} [data-role=file-link]")
    assert "report.md" in link.inner_text()
    with page.expect_download() as info:
        link.locator("a:has-text('download')").click()
    assert open(info.value.path(), "rb").read() == (folder / "report.md").read_bytes()
    assert page.locator(f"#run-{run.pk} [data-role=written-files]").count() == 1
    shoot(page, artifacts, "report-written")
    with page.expect_download() as info:
        page.click("[data-role=download-all]")
    archive = zipfile.ZipFile(io.BytesIO(open(info.value.path(), "rb").read()))
    on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert sorted(archive.namelist()) == on_disk
    for name in on_disk:
        assert archive.read(name) == (folder / name).read_bytes()
    # The preview renders the Markdown through the sanitiser.
    preview = page.context.new_page()
    preview.goto(f"/c/{convo.pk}/files/view/report.md")
    assert preview.locator("[data-role=preview]").inner_text().strip()
    shoot(preview, artifacts, "preview")
    # Bob cannot reach it.
    bob = page_for("bob", "bob-pass")
    response = bob.request.get(f"/c/{convo.pk}/files/download/report.md")
    assert response.status == 404
    assert json.loads(call_args(run)).get("path") == "report.md"


def call_args(run) -> str:
    return ToolCall.objects.get(run=run, name="write_file").arguments


def test_a_refused_upload_says_why(demo_tools, page_for, settings):
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.set_input_files("#file-input", files=[{"name": "tool.exe", "mimeType": "application/x-msdownload",
                                                 "buffer": b"MZ"}])
    page.wait_for_selector("#upload-status.error")
    status = page.locator("#upload-status [data-role=upload-message]")
    assert ".exe files are not accepted" in status.inner_text()
    assert page.locator("[data-role=pending-attachments] li").count() == 0


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (3000, 600), "teal").save(out, "PNG")
    return out.getvalue()


def test_an_image_goes_to_a_vision_profile_and_is_refused_for_text_only(demo_provider, cast, page_for, artifacts):
    from chatapp.models import Round

    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.set_input_files("#file-input", files=[{"name": "chart.png", "mimeType": "image/png", "buffer": _png()}])
    page.wait_for_selector("[data-role=pending-attachments] li:has-text('chart.png')")
    page.fill("#message", "Describe this picture please")
    page.press("#message", "Enter")
    error = page.locator("#send-error")
    error.wait_for()
    assert "reads text only" in error.inner_text() and "chart.png" in error.inner_text()
    assert page.input_value("#message") == "Describe this picture please"  # nothing lost
    shoot(page, artifacts, "image-refused")
    demo_provider.capability_overrides = {"user_image_media": ["image/png"], "image_max_edge": 1568}
    demo_provider.save()
    page.press("#message", "Enter")
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    run = Run.objects.get(conversation__owner=cast["alice"])
    request = Round.objects.filter(run=run).order_by("index").first().request
    user = [m for m in request["messages"] if m["role"] == "user"][-1]
    assert [m["mime_type"] for m in user["media"]] == ["image/png"]
    # The demo model read an OpenAI image_url part with a data URL off the wire and says so.
    assert "I received 1 image(s): image/png" in page.locator("[data-role=answer]").inner_text()
    # The files panel's preview shows the image itself (decoded by the browser, at its own size).
    preview = page.context.new_page()
    preview.goto(f"/c/{run.conversation_id}/files/view/chart.png")
    image = preview.locator("img[data-role=preview]")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.complete && img.naturalWidth") == 3000
    shoot(preview, artifacts, "image-preview")


def test_a_large_upload_shows_its_progress(demo_tools, page_for):
    # Uploads are throttled to 1 MB/s through Chromium's network emulation, so a 3 MB file takes a few
    # seconds and the page has progress to show between 0 and 100 %.
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 1_000_000,
    })
    page.evaluate("""() => {
      window.seenProgress = [];
      const bar = document.querySelector('#upload-status progress');
      new MutationObserver(() => window.seenProgress.push(bar.value)).observe(bar, {attributes: true});
    }""")
    page.set_input_files("#file-input", files=[{"name": "big.csv", "mimeType": "text/csv",
                                                 "buffer": b"a,b\n" * 750_000}])
    page.wait_for_selector("text=1 file uploaded", timeout=60_000)
    seen = page.evaluate("window.seenProgress")
    assert any(0 < value < 100 for value in seen), seen
    assert page.locator("#upload-status progress").is_hidden()  # the bar goes away when it is done
