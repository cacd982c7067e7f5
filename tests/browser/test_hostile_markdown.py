"""A model that emits Mermaid, KaTeX or HTML with script in it: nothing runs (no dialog, the canary
``window.__xss`` never set, no request leaves the page's origin), the diagrams are still drawn from
their sanitised source, and the page stays responsive. CSP stays on, as in production."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db(transaction=True)

BEACON = "http://127.0.0.1:9/beacon"
DIAGRAMS = [
    # click handlers: a callback by name, a javascript: link, an href to elsewhere
    'graph TD\n  A[Start] --> B[End]\n  click A call alert("click-call")\n  click B "javascript:window.__xss=1"',
    'graph LR\n  A --> B\n  click A href "javascript:alert(1)" "tip"\n  click B href "' + BEACON + '/href" _blank',
    # an init directive asking for the loose security level, HTML labels and a script in a label
    '%%{init: {"securityLevel": "loose", "startOnLoad": true, "htmlLabels": true, "flowchart": {"htmlLabels": true}}}%%\n'
    'graph TD\n  A["<img src=x onerror=window.__xss=1>"] --> B["<script>window.__xss=1</script>"]',
    # style injection: CSS that fetches, an expression, and a theme override through a directive
    "%%{init: {\"themeCSS\": \"* { background: url(" + BEACON + "/css) }\", \"fontFamily\": \"x;}</style><script>window.__xss=1</script>\"}}%%\n"
    "graph TD\n  A --> B\n  style A fill:url(" + BEACON + "/fill)\n  classDef evil fill:#f00,stroke:url(" + BEACON + "/stroke)\n  class B evil",
    # foreignObject and raw SVG smuggled through a label
    'graph TD\n  A["<foreignObject><body onload=window.__xss=1></body></foreignObject>"] --> B["<svg onload=alert(3)>"]',
    # a sequence diagram with a link menu
    'sequenceDiagram\n  participant A\n  link A: Evil @ javascript:alert(4)\n  A->>A: <img src=x onerror=alert(5)>',
]
ANSWER = "\n\n".join(f"```mermaid\n{d}\n```" for d in DIAGRAMS) + """

Math with commands that could link or run: $\\href{javascript:alert(6)}{click}$ and
$\\htmlData{onclick=alert(7)}{x}$ and $\\url{javascript:alert(8)}$ and $$\\includegraphics{""" + BEACON + """/img}$$

<a href="javascript:window.__xss=1" id="hostile-link">plain link</a>
<div onclick="window.__xss=1" id="hostile-div">click me</div>
<style>body { background: url(""" + BEACON + """/style) }</style>
<svg><foreignObject><iframe src="javascript:alert(9)"></iframe></foreignObject></svg>
"""


def test_hostile_diagrams_math_and_html_run_nothing_and_the_page_stays_responsive(
    cast, demo_provider, page_for, artifacts
):
    convo = Conversation.objects.create(owner=cast["alice"], title="hostile")
    question = Message.objects.create(conversation=convo, role="user", content="draw it", payload={})
    run = Run.objects.create(
        conversation=convo, user_message=question, provider_name="demo", model="clearloop-demo", status="succeeded"
    )
    Message.objects.create(conversation=convo, role="assistant", content=ANSWER, payload={}, run=run)
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    dialogs: list[str] = []
    elsewhere: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"/c/{convo.pk}/")
    origin = page.url.split("/c/")[0]
    page.on("request", lambda r: None if r.url.startswith((origin, "data:", "blob:")) else elsewhere.append(r.url))
    page.reload()
    answer = page.locator(f"#run-{run.pk} [data-role=answer]")
    # Every diagram is either drawn (an SVG) or explained ("could not be drawn"): none is left as code.
    drawn = answer.locator("figure.mermaid-diagram svg")
    refused = answer.locator("p.muted", has_text="The diagram could not be drawn")
    page.wait_for_function(
        "n => document.querySelectorAll('[data-role=answer] figure.mermaid-diagram').length"
        " + Array.from(document.querySelectorAll('[data-role=answer] p.muted'))"
        ".filter(p => p.textContent.includes('could not be drawn')).length === n",
        arg=len(DIAGRAMS),
        timeout=20_000,
    )
    expect(answer.locator("pre > code.language-mermaid")).to_have_count(refused.count())
    assert drawn.count() >= 3, answer.inner_html()[:2000]
    expect(answer.locator(".katex").first).to_be_visible()
    # Click everything a person could click in the answer: diagram nodes, links, the hostile div.
    for target in answer.locator("figure.mermaid-diagram .node, figure.mermaid-diagram a, a, #hostile-div").all():
        if target.is_visible():
            target.click(force=True, no_wait_after=True, timeout=2_000)
    page.wait_for_timeout(300)  # let any handler that might have been attached run (there must be none)
    assert dialogs == []
    assert page.evaluate("window.__xss") is None
    assert elsewhere == []
    found = page.evaluate(
        """() => ({
        scripts: document.querySelectorAll('[data-role=answer] script, [data-role=answer] foreignObject, [data-role=answer] iframe').length,
        handlers: Array.from(document.querySelectorAll('[data-role=answer] *')).filter(
            (el) => Array.from(el.attributes).some((a) => a.name.startsWith('on'))).length,
        jsLinks: Array.from(document.querySelectorAll('[data-role=answer] [href], [data-role=answer] [*|href]')).filter(
            (el) => /^\\s*javascript:/i.test(el.getAttribute('href') || el.getAttribute('xlink:href') || '')).length,
    })"""
    )
    assert found == {"scripts": 0, "handlers": 0, "jsLinks": 0}
    # Responsive: the page still answers input at once (typing into the message box).
    started = time.monotonic()
    page.fill("#message", "still here")
    expect(page.locator("#message")).to_have_value("still here")
    assert time.monotonic() - started < 2
    answer.screenshot(path=str(artifacts / "markdown-hostile-1440-light.png"))
