"""Model text to HTML: markdown-it-py renders (raw HTML off), Pygments highlights, nh3 sanitises last.

GitHub-style extras come from mdit-py-plugins: tables, task lists (disabled checkboxes), footnotes,
and ``$…$`` / ``$$…$$`` math, which stays as escaped source in ``span.math``/``div.math`` for KaTeX in
the browser (static/js/rich.js). Mermaid fences stay escaped source in ``code.language-mermaid``.
Whatever the browser draws is drawn from this sanitised text, never from raw model output.

The HTML of a text is kept (``rendered.py``): it depends on nothing but the text, and rendering a real
model's answer costs milliseconds (a code block through Pygments ~7 ms), which a conversation page
paid for every exchange on every open (docs/performance.md, session 26).
"""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.tasklists import tasklists_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from chatapp import rendered

_ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "a",
    "span",
    "div",
    "sup",
    "section",
    "input",
}
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "id", "class"},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "ol": {"start", "class"},
    "ul": {"class"},
    "li": {"class", "id"},
    "sup": {"class"},
    "section": {"class"},
    "hr": {"class"},
    "pre": {"class"},
    "input": {"type", "class", "disabled", "checked"},
}


def _highlight(code: str, lang: str, _attrs: str) -> str:
    try:
        lexer = get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""  # markdown-it escapes it into <pre><code class="language-…"> (mermaid stays so)
    # One <pre><code class="language-…"> as for any fence: the page reads the language from that class
    # for its label and adds the copy button (static/js/rich.js). Pygments' own <div><pre> inside
    # markdown-it's <pre><code> drew a blank first line and a box in the box.
    spans = highlight(code, lexer, HtmlFormatter(nowrap=True))
    return f'<pre class="codehilite"><code class="language-{escape(lang)}">{spans}</code></pre>'


_ALIGN = re.compile(r"^text-align:(left|center|right)$")
_ALIGNMENTS = {"align-left", "align-center", "align-right"}


def _aligned_by_class(state: StateCore) -> None:
    """A table column's alignment (``| ---: |``) as a class, not the ``style`` markdown-it writes: the
    page's CSP allows no inline style, so the alignment was dropped with a console report per cell."""
    for token in state.tokens:
        if token.type in ("th_open", "td_open"):
            style = token.attrs.pop("style", None)
            found = _ALIGN.match(str(style or ""))
            if found:
                token.attrSet("class", f"align-{found.group(1)}")


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight})
    md.enable("table").enable("strikethrough")
    md.core.ruler.push("aligned_by_class", _aligned_by_class)
    return md.use(tasklists_plugin).use(footnote_plugin).use(dollarmath_plugin, double_inline=True)


def render_markdown(text: str) -> str:
    """The sanitised HTML of a model's (or a file's) markdown ``text``, rendered once per process."""
    return rendered.kept(text or "", _render)


def _render(text: str) -> str:
    html = _renderer().render(text)
    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        # No style attribute is kept (the CSP refuses them); th/td classes are only align-*.
        allowed_classes={"th": _ALIGNMENTS, "td": _ALIGNMENTS},
    )
