"""Server side of rich Markdown: GitHub extras rendered, math and Mermaid kept as escaped source,
the vendored libraries present at the versions the page loads."""

from __future__ import annotations

import re
from pathlib import Path

from chatapp.markdown import render_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_task_lists_footnotes_and_math_survive_the_sanitiser():
    html = render_markdown("- [x] a\n- [ ] b\n\nsee[^n] $x<y$\n\n[^n]: note\n")
    assert html.count('type="checkbox"') == 2 and 'disabled="disabled"' in html
    assert 'class="footnotes"' in html and 'href="#fn1"' in html
    assert '<span class="math inline">x&lt;y</span>' in html


def test_mermaid_and_hostile_html_stay_text():
    html = render_markdown(
        '```mermaid\ngraph TD; A-->B; click A "javascript:alert(1)"\n```\n<script>x</script>'
    )
    assert '<code class="language-mermaid">graph TD; A--&gt;B;' in html
    assert "<script" not in html


def test_the_page_loads_the_vendored_versions():
    page = (ROOT / "templates" / "chat" / "page.html").read_text()
    for ref in re.findall(r"static '(vendor/[^']+)'", page):
        assert (ROOT / "static" / ref).is_file(), ref
    assert "vendor/katex-0.16.22/katex.min.js" in page and "vendor/mermaid-11.12.0.min.js" in page
    katex = (ROOT / "static/vendor/katex-0.16.22/katex.min.js").read_text()
    assert '"0.16.22"' in katex or "0.16.22" in katex


def test_a_column_alignment_is_a_class_and_no_style_attribute_survives():
    html = render_markdown("| a | b | c |\n| :-- | :-: | --: |\n| 1 | 2 | 3 |\n")
    assert '<th class="align-left">a</th>' in html and '<td class="align-right">3</td>' in html
    assert "style=" not in html
    assert "<td" not in render_markdown('<td style="x" class="align-right evil">')  # raw HTML stays text


def test_a_highlighted_block_is_one_pre_with_its_language():
    # Pygments' own <div><pre> inside markdown-it's <pre><code> drew a blank first line and a box in
    # the box (and rich.js labels the block from the code's class).
    html = render_markdown("```python\ndef f():\n    return 1\n```")
    assert html.startswith('<pre class="codehilite"><code class="language-python"><span class="k">def</span>')
    assert html.count("<pre") == 1 and "<div" not in html
    assert render_markdown("```nosuchlanguage\nx\n```").startswith(
        '<pre><code class="language-nosuchlanguage">x'
    )
