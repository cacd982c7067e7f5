"""A person in a real browser: log in, send a message, watch it stream, reload, see it stored."""

from __future__ import annotations

import pytest

from chatapp.models import Run
from tests.browser.pages import new_conversation

pytestmark = pytest.mark.django_db(transaction=True)

# Records every distinct length the streaming bubble goes through, from the page's own DOM events, and
# how many text nodes held it (one: each frame's text is appended, the whole text is not built again).
OBSERVE = """
() => {
  window.__lengths = [];
  window.__nodes = 0;  // distinct text nodes the streamed text lived in
  new MutationObserver(() => {
    const el = document.querySelector('[data-role=stream]');
    if (el && el.textContent.length !== window.__lengths[window.__lengths.length - 1]) window.__lengths.push(el.textContent.length);
    if (el && el.firstChild && el.firstChild !== window.__node) { window.__node = el.firstChild; window.__nodes++; }
  }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
}
"""


def test_answer_streams_in_token_by_token_and_survives_a_reload(cast, demo_provider, page_for, artifacts):
    page = page_for("alice", "alice-pass")
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.evaluate(OBSERVE)
    page.fill("#message", "Hello from the browser")
    page.press("#message", "Enter")
    answer = page.locator("[data-role=answer]")
    answer.wait_for(timeout=60_000)
    lengths = page.evaluate("window.__lengths")
    growing = [n for n in lengths if n > 0]
    assert len(growing) >= 3 and growing == sorted(growing), lengths
    assert page.evaluate("window.__nodes") == 1, "the streamed text was rebuilt, not appended"
    run = Run.objects.get(conversation__owner=cast["alice"])
    assert run.status == "succeeded"
    assert "Hello from the browser" in answer.inner_text()
    assert page.input_value("#message") == ""
    page.screenshot(path=str(artifacts / "chat-streamed.png"))
    page.reload()
    stored = page.locator(f"#run-{run.pk} [data-role=answer]")
    assert "Hello from the browser" in stored.inner_text()
    assert "demo model" in page.locator(f"#run-{run.pk} .model").inner_text()
