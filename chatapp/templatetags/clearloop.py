"""Template helpers. Everything returns plain text for auto-escaping; nothing is marked safe."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Pretty-print a JSON string or value; text that is not JSON is returned unchanged."""
    if isinstance(value, str):
        anchor, body = "", value
        if value.startswith("[Tool ") and "\n" in value:
            # A result anchor (R-LOOP-7) precedes the raw output: keep it, pretty-print the rest.
            anchor, body = value.split("\n", 1)
            anchor += "\n"
        try:
            return anchor + json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        except (ValueError, TypeError):
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter
def for_people(value: str) -> str:
    """A tool result as a person reads it: without the anchor line written for the model
    ("[Tool "x" ran successfully. Its raw output follows.]"), JSON pretty-printed. The exact text
    the model saw stays one toggle away in the trace ("Text sent to the model")."""
    if isinstance(value, str) and value.startswith("[Tool ") and "\n" in value:
        value = value.split("\n", 1)[1]
    return pretty_json(value)


@register.filter
def head(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[:limit]


@register.filter
def folded(text: str, limit: int = 100_000) -> str:
    """At most ``limit`` characters, with the full size named: a 10 MiB argument must not become a
    10 MiB page (issue 16 item 8). The trace export has the whole value."""
    text = text or ""
    if len(text) <= limit:
        return text
    size = len(text.encode("utf-8", "replace"))
    return f"{text[:limit]}\n… [folded: {size:,} bytes in all; the run's trace export has the whole value]"


@register.filter
def longer_than(text: str, limit: int = 2000) -> bool:
    return len(text or "") > limit


@register.filter
def ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


@register.filter
def round_cost(value: Any) -> str:
    """A round's cost, or "unknown (why)": an unknown cost is never shown as zero."""
    from chatapp.costs import round_label

    return round_label(value)


@register.filter
def status_word(value: str) -> str:
    """A stored state ("awaiting_approval") in words of the active language ("Awaiting approval")."""
    from chatapp.status_words import word

    return word(str(value or ""))


@register.filter
def stored_text(value: str) -> str:
    """An English text stored by the worker or a button (a run's error, an approval's reason) in the
    active language when it is a known one (chatapp/stored_texts.py); anything else as stored."""
    from chatapp.stored_texts import shown

    return shown(str(value or ""))


@register.simple_tag
def js_catalog_url() -> str:
    """The active language's JavaScript catalogue under the URL that names its content (browsers keep
    it: chatapp/js_catalog.py)."""
    from django.urls import reverse
    from django.utils import translation

    from chatapp.js_catalog import UnknownLanguage, catalog

    try:
        found, code = catalog(translation.get_language()), translation.get_language()
    except UnknownLanguage:
        return reverse("javascript_catalog")
    return reverse("javascript_catalog_versioned", args=[code, found.version])
