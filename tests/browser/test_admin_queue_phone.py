"""The admin's approval queue on a phone (375 px): every column it shows fits on screen, or the table
scrolls sideways inside its own box (never the page); the status cell is whole, and no word is cut."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Approval, ToolCall
from tests.admin.test_approvals import waiting_call

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 375, "height": 812}
QUEUE = "/admin/chatapp/toolcall/"

# Every visible cell of the result list, with its box and the box of the scroll container it is in.
CELLS = """() => {
  const rows = [];
  for (const cell of document.querySelectorAll('#result_list th, #result_list td')) {
    const box = cell.getBoundingClientRect();
    if (box.width === 0 || getComputedStyle(cell).display === 'none') continue;
    let port = cell.parentElement;
    while (port && port !== document.body && !/(auto|scroll)/.test(getComputedStyle(port).overflowX)) port = port.parentElement;
    const clip = port && port !== document.body ? port.getBoundingClientRect() : { left: 0, right: innerWidth };
    rows.push({ cls: cell.className, text: cell.innerText.trim(), left: box.left, right: box.right,
                clipLeft: clip.left, clipRight: clip.right, scrollWidth: cell.scrollWidth, clientWidth: cell.clientWidth });
  }
  return rows;
}"""


@pytest.fixture
def queue_rows(cast):
    long_user = cast["alice"]
    calls = [waiting_call(long_user) for _ in range(2)]
    decided = waiting_call(long_user, name="demo_tools__delete_every_file_in_the_workspace")
    decided.status = ToolCall.Status.DENIED
    decided.save(update_fields=["status"])
    Approval.objects.create(
        tool_call=decided, decision="denied", decided_by=cast["ada"], reason="not on a Friday afternoon",
        definition_hash=decided.definition_hash,
    )
    return calls


def test_the_queue_fits_a_phone_in_both_themes(cast, queue_rows, page_for, artifacts):
    page = page_for("ada", "ada-pass", PHONE)
    page.goto(QUEUE + "?queue=all")
    expect(page.locator("#result_list")).to_be_visible()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(artifacts / f"admin-queue-375-{scheme}.png"), full_page=True)
    # The page itself never scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    cells = page.evaluate(CELLS)
    assert cells
    for cell in cells:
        # Each cell is inside the viewport, or inside a box that scrolls, and that box is on screen.
        assert cell["clipLeft"] >= 0 and cell["clipRight"] <= PHONE["width"], cell
        if cell["clipRight"] == PHONE["width"] and cell["clipLeft"] == 0:
            assert cell["right"] <= PHONE["width"], cell
        assert cell["scrollWidth"] <= cell["clientWidth"] + 1, cell  # nothing cut inside the cell
    # The status of each call is fully visible without scrolling anything.
    statuses = page.locator("#result_list td.field-status")
    expect(statuses).to_have_count(3)
    for i in range(3):
        box = statuses.nth(i).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
        expect(statuses.nth(i)).to_be_in_viewport(ratio=1)
    # Whole words: a status is one line of text, never broken inside a word.
    for text, lines in page.evaluate(
        """() => [...document.querySelectorAll('#result_list td.field-status')].map(c => {
             const r = document.createRange(); r.selectNodeContents(c);
             return [c.innerText, r.getBoundingClientRect().height / parseFloat(getComputedStyle(c).lineHeight)];
           })"""
    ):
        assert lines < 1.5, (text, lines)
    # The same queue on a desktop, every column in one line of the page.
    page.set_viewport_size({"width": 1440, "height": 900})
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(artifacts / f"admin-queue-1440-{scheme}.png"))
    assert page.evaluate("document.querySelector('#changelist-form .results').scrollWidth") <= page.evaluate(
        "document.querySelector('#changelist-form .results').clientWidth"
    )
