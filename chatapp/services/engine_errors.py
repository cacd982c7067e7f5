"""The engine's configuration errors in the reader's language.

``agent/`` has no Django, so its named exceptions (``KnobError``, ``ProfileError``,
``McpConfigError``) carry an English message plus a ``code`` naming the rule and the ``params`` it
was given. This is the boundary where the admin (and the MCP test report) says the same thing in the
page's language: one catalogue template per code, filled with the same values. The values are names
and settings (a preset, a field, a server's slug), shown as they are; in English the result is the
engine's own message, word for word.

An exception without a known code (a new rule in the engine, or a message from elsewhere) is shown
as the engine wrote it: English, but never hidden. tests/admin/test_admin_chinese.py checks every code
the engine raises has a template here.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext, ngettext_lazy
from django.utils.translation import gettext_lazy as _

from agent.mcp import McpConfigError
from agent.providers.knobs import KnobError
from agent.providers.profiles import ProfileError

# Lazy: built at import, read in the language of the page that shows them.
KNOB_TEMPLATES = {
    "unsupported": _("preset %(q_preset)s does not support %(knobs)s (it supports: %(supported)s)"),
    "effort": _("reasoning effort %(q_effort)s is not one of %(allowed)s for %(q_preset)s"),
    "budget_needs_thinking": _("a thinking budget needs thinking on (or left at the provider's default)"),
    "budget_positive": _("the thinking budget must be a positive number of tokens"),
    "budget_minimum": _("Anthropic's thinking budget is at least %(minimum)s tokens"),
    "extra_body_type": _("the extra body must be a JSON object, not %(got)s"),
    "extra_body_reserved": ngettext_lazy(
        "the extra body may not set %(fields)s: clearloop sends that field itself",
        "the extra body may not set %(fields)s: clearloop sends those fields itself",
        "count",
    ),
}
PROFILE_TEMPLATES = {
    "unknown_preset": _("unknown provider preset %(q_preset)s; expected one of %(known)s"),
    "unknown_override": _("unknown capability override(s) %(unknown)s; known: %(known)s"),
    "override_choice": _("%(field)s must be one of %(allowed)s, not %(value)s"),
    "override_bool": _("%(field)s must be true or false, not %(value)s"),
}
MCP_TEMPLATES = {
    "name": _(
        "server name %(q_server)s must be a slug: lowercase letters, digits, '-' or '_', at most 32 "
        "characters, no '__' (it separates server and tool names)"
    ),
    "transport": _("%(server)s: unknown transport %(q_transport)s"),
    "command": _("%(server)s: a stdio server needs a command"),
    "url": _("%(server)s: an %(transport)s server needs an http(s) url"),
    "timeouts": _("%(server)s: timeouts must be positive"),
    "no_slug": _("server name %(q_server)s has no usable characters"),
    "json": _("not valid JSON: %(detail)s"),
    "document": _("expected a JSON object"),
    "servers": _('expected an object under "mcpServers"'),
    "same_slug": _("servers %(q_first)s and %(q_second)s share the slug %(q_slug)s"),
    "strings": _("%(server)s: %(field)s must be an object of strings"),
    "entry": _("%(server)s: entry must be an object"),
    "command_args": _("%(server)s: command must be a string and args a list"),
    "command_or_url": _("%(server)s: needs either a command or a url"),
    "type": _("%(server)s: unknown type %(q_kind)s"),
}
# What the extra body was instead of an object (KnobError "extra_body_type").
JSON_TYPES = {
    "a boolean": _("a boolean"),
    "a string": _("a string"),
    "a number": _("a number"),
    "an array": _("an array"),
    "null": _("null"),
}


def _templates(exc: Exception) -> dict[str, Any]:
    if isinstance(exc, KnobError):
        return KNOB_TEMPLATES
    if isinstance(exc, ProfileError):
        return PROFILE_TEMPLATES
    if isinstance(exc, McpConfigError):
        return MCP_TEMPLATES
    return {}


def engine_message(exc: Exception) -> str:
    """The exception's message in the active language (its English text for an unknown code)."""
    code: str = getattr(exc, "code", "")
    params: dict[str, Any] = dict(getattr(exc, "params", {}) or {})
    template = _templates(exc).get(code)
    if template is None:
        return str(exc)
    if code == "unsupported" and not params.get("supported"):
        params["supported"] = gettext("none")
    # The engine quotes names with repr ('openai'); the templates do the same through q_<name>.
    params.update({f"q_{key}": repr(value) for key, value in list(params.items()) if isinstance(value, str)})
    if code == "extra_body_type":
        params["got"] = JSON_TYPES.get(params.get("got", ""), params.get("got", ""))
    try:
        return str(template % params)
    except (KeyError, TypeError, ValueError):  # a code whose values changed: the engine's own words
        return str(exc)
