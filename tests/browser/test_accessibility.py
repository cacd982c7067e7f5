"""WCAG AA in both themes, checked with axe-core (tests/browser/axe_check.py): the chat page (an approval
card, then a finished run with its trace and timeline open), the approvers' queue in the admin (with the
badge's list open) and the audit pages (runs, a run, the log), at 1440 and 375 px. Zero serious or
critical violations; keyboard focus is visible."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from chatapp.models import Run, ToolCall
from tests.browser.axe_check import serious

pytestmark = pytest.mark.django_db(transaction=True)

SMS = "send a text message to 13800000000 saying the deploy finished"
SIZES = ({"width": 1440, "height": 900}, {"width": 375, "height": 812})


def check(page, name: str, artifacts, found: dict) -> None:
    """axe on the page in light and dark at both sizes; screenshots for a person to look at."""
    for size in SIZES:
        page.set_viewport_size(size)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=str(artifacts / f"a11y-{name}-{size['width']}-{scheme}.png"), animations="disabled")
            for v in serious(page):
                found.setdefault(f"{name} {size['width']} {scheme}", []).append(v)


def test_chat_queue_and_audit_pages_have_no_serious_axe_violations(cast, demo_tools, page_for, artifacts):
    found: dict = {}
    user = page_for("alice", "alice-pass", bypass_csp=True)
    user.click("text=New conversation")
    user.wait_for_url(re.compile(r"/c/\d+/$"))
    user.wait_for_load_state("load")
    user.fill("#message", SMS)
    user.press("#message", "Enter")
    expect(user.locator("[data-role=approval-card] .approval-card")).to_be_visible(timeout=60_000)
    check(user, "chat-waiting", artifacts, found)

    admin = page_for("ada", "ada-pass", bypass_csp=True)
    admin.goto("/admin/chatapp/toolcall/")
    admin.locator("#site-name [data-role=approvals-badge]").click()
    expect(admin.locator("#site-name [data-role=approvals-panel] li[data-call]")).to_have_count(1)
    check(admin, "admin-queue", artifacts, found)
    call = ToolCall.objects.get(run__conversation__owner=cast["alice"])
    admin.goto(f"/admin/chatapp/toolcall/{call.pk}/change/")
    check(admin, "admin-review", artifacts, found)
    admin.set_viewport_size(SIZES[0])
    admin.fill("#deny-reason", "not today")
    admin.click("#deny-form input[type=submit]")

    run = Run.objects.get(conversation__owner=cast["alice"])
    user.set_viewport_size(SIZES[0])
    expect(user.locator(f"#run-{run.pk} [data-role=answer]")).to_be_visible(timeout=60_000)
    user.locator(f"#run-{run.pk} [data-role=trace] > summary").click()
    expect(user.locator(f"#run-{run.pk} .timeline .tl-row").first).to_be_visible()
    check(user, "chat-done", artifacts, found)

    auditor = page_for("otto", "otto-pass", bypass_csp=True)
    for name, url in (("audit-runs", "/audit/"), ("audit-run", f"/audit/runs/{run.pk}/"), ("audit-log", "/audit/log/")):
        auditor.goto(url)
        if name == "audit-run":
            # A summary with the timeline; each round's raw request is loaded when it is opened.
            expect(auditor.locator(".timeline .tl-row").first).to_be_visible()
            expect(auditor.locator("[data-role=raw-request]")).to_have_count(0)
            auditor.locator("details.raw-round > summary").first.click()
            expect(auditor.locator("[data-role=raw-request]")).to_contain_text('"messages"')
        check(auditor, name, artifacts, found)
        for size in SIZES:  # no word is squeezed into a one-letter column, at any size
            auditor.set_viewport_size(size)
            squeezed = auditor.evaluate(
                """() => Array.from(document.querySelectorAll('.audit th, .audit td:not(:last-child)')).filter((c) => {
                    const tops = new Set(), walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
                    for (let t = walk.nextNode(); t; t = walk.nextNode()) {
                      const r = document.createRange(); r.selectNodeContents(t);
                      for (const x of r.getClientRects()) if (x.width) tops.add(Math.round(x.bottom));
                    }
                    return tops.size > 1;  // its text runs over more than one line
                }).map((c) => c.textContent.trim().slice(0, 30))"""
            )
            assert squeezed == [], (name, size, squeezed)
            wide = auditor.evaluate(
                """(w) => Array.from(document.querySelectorAll('body *')).filter((e) => e.getBoundingClientRect().right > w + 1)
                    .slice(0, 5).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""",
                size["width"],
            )
            assert auditor.evaluate("document.scrollingElement.scrollWidth") <= size["width"] + 1, (name, size, wide)
    (artifacts / "a11y-violations.json").write_text(json.dumps(found, indent=2))
    summary = sorted({f"{page}: {v['id']} {n['target']}" for page, vs in found.items() for v in vs for n in v["nodes"]})
    assert found == {}, "\n".join(summary)
