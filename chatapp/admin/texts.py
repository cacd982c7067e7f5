"""Admin texts translated when shown that also carry values (a mask, a list of presets).

Form help texts are built at import time, before any request has a language: ``gettext_lazy``
covers plain sentences, and ``lazy_percent`` those with ``%(name)s`` values (``format_lazy`` would
trip over the JSON braces these examples hold). Mark the template with ``gettext_noop`` at the call
so ``makemessages`` finds it.
"""

from __future__ import annotations

from typing import Any

from django.utils.functional import lazy
from django.utils.translation import gettext


def _percent(template: str, values: dict[str, Any]) -> str:
    return gettext(template) % values


_lazy_percent = lazy(_percent, str)


def lazy_percent(template: str, **values: Any) -> Any:
    """``gettext(template) % values``, evaluated each time it is shown (in that request's language)."""
    return _lazy_percent(template, values)
