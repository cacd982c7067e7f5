"""English texts stored in the database, shown in the reader's language.

Run errors, the chat's Allow once / Deny reasons and a budget stop are written in English when they
happen (the worker has no reader, and the audit chain pins what was stored), so they are translated
when shown instead: ``shown(stored)`` in Python, the ``stored_text`` filter in templates. The stored
row, the API and the exports keep the English.

Only the texts listed here are translated, never an arbitrary stored string looked up as a msgid:
a person's own approval reason that happens to equal a UI word stays as they wrote it.

- ``FIXED``: whole messages, looked up as they are.
- ``TEMPLATES``: messages with variable parts, written as the ``%(name)s`` template they come from.
  Each becomes an anchored pattern; the captured parts are shown through ``shown`` again (a budget's
  "1,234 tokens", a wrapped provider message) and put into the translated template. Where the
  producer already builds its text from a catalogue template (the budget sentences in
  ``services/quotas.py``) the same msgid is listed; the engine's own texts (``agent/`` has no
  Django) are copied here and tests/web/test_stored_texts.py checks them against their producers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from django.utils.translation import gettext, gettext_noop

FIXED: frozenset[str] = frozenset(
    {
        # services/runs.py: a queued or waiting run stopped by its owner.
        gettext_noop("Stopped by the user."),
        # agent/loop/runner.py and worker/driver.py: a run stopped while a worker drove it.
        gettext_noop("The run was stopped by the user."),
        # views/approvals.py: the chat's Allow once / Deny buttons.
        gettext_noop("Allowed once in the chat"),
        gettext_noop("Denied in the chat"),
        # services/quotas.py: whose budget ran out.
        gettext_noop("your quota"),
        # agent/providers: fixed provider failures.
        gettext_noop("the stream ended before message_stop"),
        gettext_noop("the stream ended before response.completed or response.incomplete"),
        gettext_noop("the stream ended without any choice"),
        gettext_noop("the stream ended before a finish_reason or [DONE]"),
        gettext_noop("the response body is not a JSON object"),
        gettext_noop("the provider stream ended without a response"),
        gettext_noop(
            "timed out: the response took longer than the total timeout (not retried: the provider "
            "may have billed it; raise the provider's total timeout for longer answers)"
        ),
        # agent/loop/model_round.py: a context that cannot shrink.
        gettext_noop(
            "the run holds preserved thinking blocks, and compressing anything before them would "
            "invalidate them (Anthropic preserved thinking); start a new conversation or turn "
            "thinking off"
        ),
    }
)

TEMPLATES: tuple[str, ...] = (
    # worker/lease.py: a run whose worker kept dying.
    gettext_noop(
        "The run was started %(n)s times and never finished (its worker kept dying); it was stopped "
        "so it cannot take more workers down."
    ),
    # services/quotas.py: a budget used up between two rounds (the same msgids as there).
    gettext_noop(
        "The daily token budget is used up: %(used)s today, the limit is %(limit)s (%(whose)s). "
        "It resets at midnight (%(tz)s)."
    ),
    gettext_noop(
        "The monthly token budget is used up: %(used)s this month, the limit is %(limit)s "
        "(%(whose)s). It resets on the first of next month (%(tz)s)."
    ),
    gettext_noop(
        "The daily cost budget is used up: %(used)s today, the limit is %(limit)s (%(whose)s). "
        "It resets at midnight (%(tz)s)."
    ),
    gettext_noop(
        "The monthly cost budget is used up: %(used)s this month, the limit is %(limit)s "
        "(%(whose)s). It resets on the first of next month (%(tz)s)."
    ),
    gettext_noop("the quota of group %(group)s (together)"),
    gettext_noop("the quota of group %(group)s (each member)"),
    gettext_noop("%(n)s tokens"),
    # agent/loop/runner.py: the wrappers around a provider's or the context's message.
    gettext_noop("The conversation no longer fits the model's context window: %(message)s"),
    gettext_noop(
        "%(message)s (the provider asks to wait %(wait)s s before retrying, longer than a run "
        "waits: %(limit)s s)"
    ),
    # agent/loop/model_round.py, agent/providers/error_map.py.
    gettext_noop("the input (~%(n)s tokens) leaves no room for an answer in the context window"),
    gettext_noop(
        "stalled: no bytes from the provider for %(seconds)s s (not retried: the provider may "
        "already be generating and billing the answer; raise the provider's idle timeout if its "
        "model thinks silently for longer)"
    ),
    gettext_noop("%(message)s (before any output)"),
    gettext_noop("timed out: %(error)s"),
    gettext_noop("connection failed: %(error)s"),
    gettext_noop("the connection closed early: %(error)s"),
)

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
# Parts that are numbers ("12", "1,234", "2.5"): "%(n)s tokens" must not match any text ending in "tokens".
_NUMERIC = {"n", "seconds", "wait"}


@dataclass(frozen=True, slots=True)
class _Pattern:
    template: str  # the English msgid
    regex: re.Pattern[str]


@cache
def patterns() -> tuple[_Pattern, ...]:
    patterns = []
    for template in TEMPLATES:
        pieces = _PLACEHOLDER.split(template)  # literal, name, literal, name, ..., literal
        regex = "".join(re.escape(p) if i % 2 == 0 else _part(p) for i, p in enumerate(pieces))
        patterns.append(_Pattern(template, re.compile(f"^{regex}$", re.DOTALL)))
    return tuple(patterns)


def _part(name: str) -> str:
    return f"(?P<{name}>[0-9][0-9.,]*)" if name in _NUMERIC else f"(?P<{name}>.+?)"


def shown(stored: str, depth: int = 0) -> str:
    """``stored`` in the active language when it is one of the texts above, else unchanged."""
    if not stored or depth > 3:
        return stored
    if stored in FIXED:
        return gettext(stored)
    for pattern in patterns():
        match = pattern.regex.match(stored)
        if match:
            parts = {name: shown(value, depth + 1) for name, value in match.groupdict().items()}
            return gettext(pattern.template) % parts
    return stored
