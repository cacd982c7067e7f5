"""A streaming answer is drawn as markdown while it arrives (static/js/stream_markdown.js): lists, tables
and emphasis show up before the run ends, hostile markup never does, the blocks already complete are
drawn once and kept while the rest streams in, and the hidden stream box keeps the text exactly as it
came (what replays and resumes are checked against)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from chatapp.models import Run, RunEvent
from tests.browser.pages import new_conversation
from tests.web.test_streamed_so_far import streaming_run

pytestmark = pytest.mark.django_db(transaction=True)

# The demo model echoes the question, markdown and all, in a paragraph of its own words around it.
QUESTION = (
    "intro\n\n**bold** and `x`\n\n- one\n- two\n\n```py\nx = 1\n```\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n\n"
    '![i](/x.png) [j](javascript:window.__pwned=1) <img src=x onerror="window.__pwned=2">\n\nend'
)

# What the draft box showed while the run streamed, recorded from the page's own DOM mutations: the
# markdown seen in it, anything hostile, and whether the first block was built again once complete.
OBSERVE = """
() => {
  window.__seen = {};
  window.__bad = [];
  window.__first = null;
  window.__rebuilt = 0;
  const probes = {strong: 'strong', item: 'ul > li', table: 'table th.align-right', code: 'p code',
                  bar: '.code-toolbar + pre > code.language-py'};
  new MutationObserver(() => {
    const el = document.querySelector('#messages [data-role=draft]');
    if (!el) return;
    for (const [name, sel] of Object.entries(probes)) if (el.querySelector(sel)) window.__seen[name] = true;
    el.querySelectorAll('img, script, [onerror], [style], a[href^="javascript"]').forEach(n => window.__bad.push(n.outerHTML));
    if (el.children.length >= 2) {
      if (!window.__first) window.__first = el.firstElementChild;
      else if (el.firstElementChild !== window.__first) window.__rebuilt++;
    }
  }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
}
"""


def test_markdown_shows_while_the_answer_streams_and_hostile_markup_never(
    cast, demo_provider, page_for, artifacts
):
    page = page_for("alice", "alice-pass", viewport={"width": 1440, "height": 900})
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    # The libraries load once the page is idle; text that comes before them is drawn when they come.
    page.wait_for_function("() => window.markdownit && window.DOMPurify")
    page.evaluate(OBSERVE)
    page.fill("#message", QUESTION)
    page.press("#message", "Enter")
    page.wait_for_selector("#messages [data-role=draft] table", timeout=60_000)
    # Most likely mid-stream: the table is the echo's middle.
    page.screenshot(path=str(artifacts / "stream-markdown-streaming-1440-light.png"))
    answer = page.locator("[data-role=answer]")
    answer.wait_for(timeout=60_000)
    seen = page.evaluate("window.__seen")
    assert seen == {"strong": True, "item": True, "table": True, "code": True, "bar": True}, seen
    assert page.evaluate("window.__bad") == []
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("window.__first !== null"), "the draft never held two blocks"
    assert page.evaluate("window.__rebuilt") == 0, "a complete block was drawn again"
    assert Run.objects.get(conversation__owner=cast["alice"]).status == "succeeded"
    # The server's HTML replaced the draft, with the same structure.
    assert answer.locator("ul > li").count() == 2 and answer.locator("th.align-right").count() == 1
    page.screenshot(path=str(artifacts / "stream-markdown-ended-1440-light.png"))


def test_text_streamed_before_the_page_opened_is_drawn_too(cast, demo_provider, page_for):
    run = streaming_run(cast["alice"])
    run.lease_owner, run.lease_expires_at = "elsewhere", timezone.now() + timedelta(hours=1)
    run.save(update_fields=["lease_owner", "lease_expires_at"])
    RunEvent.objects.create(
        run=run, seq=6, type="delta", payload={"round_index": 0, "text": "\n\n- **a**\n- b", "tool_calls": []}
    )
    page = page_for("alice", "alice-pass")
    page.goto(f"/c/{run.conversation_id}/")
    draft = page.locator(f"#run-{run.pk} [data-role=draft]")
    expect(draft.locator("ul > li strong")).to_have_text("a", timeout=30_000)
    # Markup in the model's text stays text: escaped by the renderer, not dropped.
    expect(draft.locator("p").first).to_have_text("Hello <b>there</b>\nline two")
    assert draft.locator("b").count() == 0
    stream = page.locator(f"#run-{run.pk} [data-role=stream]")
    expect(stream).to_be_hidden()
    assert stream.text_content() == "Hello <b>there</b>\nline two\n\n- **a**\n- b"


BEACON = "http://127.0.0.1:9/beacon"
HOSTILE = f"""- sentinel

[js](javascript:window.__xss=1) [vb](vbscript:msgbox(1)) [data](data:text/html;base64,PHNjcmlwdD4=) [ok](https://example.com/ok "t")
<javascript:window.__xss=1> <https://example.com/auto> [rel](/c/1/)

![img]({BEACON}/img) ![x](javascript:window.__xss=1)

<img src=x onerror=window.__xss=1><script>window.__xss=1</script><a href="javascript:window.__xss=1">raw</a>

[ref] &lt;img src=x onerror=window.__xss=1&gt; &#60;script&#62;window.__xss=1&#60;/script&#62;

[ref]: javascript:window.__xss=1

| a | b |
|---|---|
| <img src={BEACON}/cell onerror=window.__xss=1> | [x](javascript:window.__xss=1) |

```html" onmouseover="window.__xss=1
<script>window.__xss=1</script>
```
"""


def test_hostile_markdown_in_the_draft_runs_nothing_and_loads_nothing(cast, demo_provider, page_for):
    run = streaming_run(cast["alice"])
    run.lease_owner, run.lease_expires_at = "elsewhere", timezone.now() + timedelta(hours=1)
    run.save(update_fields=["lease_owner", "lease_expires_at"])
    RunEvent.objects.create(
        run=run, seq=6, type="delta", payload={"round_index": 0, "text": "\n\n" + HOSTILE, "tool_calls": []}
    )
    page = page_for("alice", "alice-pass")
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"/c/{run.conversation_id}/")
    origin = page.url.split("/c/")[0]
    draft = page.locator(f"#run-{run.pk} [data-role=draft]")
    expect(draft.locator("ul > li")).to_have_text("sentinel", timeout=30_000)
    expect(draft.locator("table td")).to_have_count(2)
    found = draft.evaluate(
        """d => ({
          bad: Array.from(d.querySelectorAll('img, script, style, iframe, svg, input, [style]')).map(n => n.outerHTML),
          handlers: Array.from(d.querySelectorAll('*')).flatMap(n => Array.from(n.attributes).filter(a => /^on/i.test(a.name)).map(a => a.name)),
          hrefs: Array.from(d.querySelectorAll('a')).map(a => [a.getAttribute('href'), a.rel]),
          classes: Array.from(d.querySelectorAll('[class]:not(.code-toolbar, .code-toolbar *)')).map(n => n.className),
        })"""
    )
    assert found["bad"] == [] and found["handlers"] == [], found
    assert found["hrefs"] == [
        ["https://example.com/ok", "noopener noreferrer nofollow"],
        ["https://example.com/auto", "noopener noreferrer nofollow"],
        ["/c/1/", "noopener noreferrer nofollow"],
    ], found["hrefs"]
    assert all(c.startswith("language-") for c in found["classes"]), found["classes"]
    assert "<script>" in draft.inner_text()  # raw HTML stays text, as the server shows it
    assert page.evaluate("window.__xss") is None
    assert [u for u in requested if not u.startswith((origin, "data:"))] == []


def test_without_the_libraries_the_answer_streams_as_plain_text_and_they_are_asked_for_once_a_page(
    cast, demo_provider, page_for
):
    page = page_for("alice", "alice-pass")
    asked: list[str] = []

    def refuse(route):
        asked.append(route.request.url)
        route.abort()

    page.route("**/vendor/markdown-it-*", refuse)
    new_conversation(page)
    page.wait_for_selector("#composer textarea")
    page.fill("#message", "**plain** please")
    page.press("#message", "Enter")
    stream = page.locator("#messages [data-role=stream]")
    expect(stream).to_contain_text("**plain** please", timeout=60_000)  # shown as it came, visible
    page.locator("[data-role=answer]").wait_for(timeout=60_000)
    assert page.locator("[data-role=answer] strong").inner_text() == "plain"  # the server's HTML at the end
    assert page.locator("[data-role=draft]").count() == 0
    # Asked once per page (the home page after the login, then the conversation), not at every frame.
    assert len(asked) <= 2, asked
