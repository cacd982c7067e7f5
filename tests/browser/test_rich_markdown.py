"""Rich Markdown in an answer: tables, task lists, footnotes, code blocks with a language label and a
Copy button, KaTeX math and a Mermaid diagram drawn in the browser from the sanitised source, with the
vendored libraries (no CDN) and nothing from the model's text executed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = """| tool | calls |
|---|--:|
| read_file | 2 |

- [x] read the config
- [ ] write the report

Parallel calls[^1] save time: $t = \\max(a, b)$ and

$$\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$$

```python
print("hi")
```

```mermaid
graph TD
  A[Ask] --> B[Answer]
  click A "javascript:window.__pwned=1"
```

<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=1">

[^1]: As in seed 004 §7.2.
"""


def test_an_answer_renders_tables_tasks_footnotes_code_math_and_diagrams(
    cast, demo_provider, page_for, artifacts
):
    convo = Conversation.objects.create(owner=cast["alice"], title="rich")
    question = Message.objects.create(conversation=convo, role="user", content="show me", payload={})
    run = Run.objects.create(
        conversation=convo,
        user_message=question,
        provider_name="demo",
        model="clearloop-demo",
        status="succeeded",
    )
    Message.objects.create(conversation=convo, role="assistant", content=ANSWER, payload={}, run=run)
    page = page_for("alice", "alice-pass", {"width": 1440, "height": 900})
    external = []
    page.on(
        "request",
        lambda r: external.append(r.url) if not r.url.startswith(page.url.split("/c/")[0]) else None,
    )
    violations = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"/c/{convo.pk}/")
    answer = page.locator(f"#run-{run.pk} [data-role=answer]")
    expect(answer.locator("table td").first).to_have_text("read_file")
    # The column's alignment (`--:`) holds: a class, since the CSP refuses the style attribute that
    # markdown-it writes (it was dropped, with a console report per cell).
    expect(answer.locator("table td").nth(1)).to_have_css("text-align", "right")
    expect(answer.locator("input.task-list-item-checkbox[disabled]")).to_have_count(2)
    expect(answer.locator("section.footnotes")).to_contain_text("seed 004")
    toolbar = answer.locator(".code-toolbar")
    expect(toolbar).to_have_count(1)
    expect(toolbar.locator(".code-lang")).to_have_text("python")
    expect(toolbar.locator("button.code-copy")).to_have_text("Copy")
    expect(answer.locator(".math.inline .katex")).to_have_count(1, timeout=15_000)
    expect(answer.locator(".math.block .katex-display")).to_have_count(1)
    diagram = answer.locator("figure.mermaid-diagram svg")
    expect(diagram).to_have_count(1, timeout=20_000)
    expect(answer.locator("figure.mermaid-diagram")).to_contain_text("Answer")
    assert page.evaluate("window.__pwned") is None
    assert answer.locator("script, img").count() == 0
    assert external == [], external  # KaTeX and Mermaid come from static/vendor
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        answer.screenshot(path=str(artifacts / f"markdown-1440-{scheme}.png"))
    page.set_viewport_size({"width": 375, "height": 812})
    answer.screenshot(path=str(artifacts / "markdown-375-light.png"))
    # Mermaid measures text with throwaway inline styles, which the CSP blocks (the drawing does not
    # need them); nothing may have tried to run a script.
    assert not [v for v in violations if "script-src" in v], violations
