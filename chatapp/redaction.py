"""Secrets removed by value before anything is stored, logged or shown (R-TOOL-4).

Known secrets are the configured API keys (environment and providers stored in the database) plus
patterns that look like keys or bearer tokens wherever they appear.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any

from agent.events import ReasoningDelta, TextDelta
from agent.replay import summarise
from chatapp import json_text

REDACTED = "[REDACTED]"
# Keys holding what a provider requires back byte for byte (agent/replay.py): a signature covers
# the thinking text, so a single replaced character makes the next request fail. These are kept
# verbatim in the stored event and round (``keep_replay=True``) and never rendered: everything
# shown goes through ``shown``, which reduces them to their size first.
# ``media`` (tool images/audio, base64) too: a pattern matching inside base64 would break the bytes a
# resumed run sends the model again; people see type and size only.
REPLAY_KEYS = frozenset({"replay", "provider_extra", "media"})
# Each with the literals one of which any match contains, looked for first (``_might_match``): a
# pattern that starts with ``\b`` gets no fast literal scan from ``re`` and cost ~0.45 ms per 40 KB
# (a round's request is redacted several times on its way to the database and the page: 30 % of a
# worker's CPU per short run, docs/performance.md); a substring search is ~100 times cheaper.
_PATTERNS: list[tuple[re.Pattern[str], tuple[str, ...], bool]] = [
    # (pattern, literals, whether the literals are looked for in the lower-cased text)
    (re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"), ("sk-",), False),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/]{12,}=*"), ("bearer",), True),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), False),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), ("AKIA",), False),
]
_SHORTEST_MATCH = 19  # "sk-" + 16, "bearer " + 12; the others are longer
_SHORTEST_SECRET = 6  # register_secret and known_secrets keep no secret shorter
_HEADER_KEYS = frozenset({"authorization", "x-api-key", "api_key", "api-key"})
_SECRET_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SECRET_KEY", "CLEARLOOP_ENCRYPTION_KEY")
# Environment variables whose values are secrets by their name (provider keys, tokens, passwords).
_SECRET_ENV_NAME = re.compile(r"CLEARLOOP_KEY_\w+|\w+_(API_KEY|TOKEN|SECRET|PASSWORD)")
# A key of a headers/env object that names a credential: its value is a secret whatever it looks like.
SECRET_NAME = re.compile(r"(?i)auth|token|secret|passw|api[-_]?key|cookie|credential|session|private")
_extra: set[str] = set()


def secret_named(key: str, value: str) -> bool:
    """Is ``value``, stored under ``key`` in a headers/env object, a secret?"""
    return bool(SECRET_NAME.search(key)) or redact_text(value) != value


def register_secret(value: str | None) -> None:
    """Remember a secret's value (e.g. a provider key loaded from the database) to redact it."""
    if value and len(value) >= _SHORTEST_SECRET:
        _extra.add(value)


def known_secrets() -> list[str]:
    # Asked for every string of every event (each streamed delta): scanning and decoding the whole
    # environment each time was a third of a streaming worker's CPU (docs/performance.md). The list
    # is rebuilt only when the environment or the registered secrets changed; the environment is
    # compared with the copy taken last time (a dict comparison, in C), so a variable set at run time
    # is redacted from the next call on.
    raw = getattr(os.environ, "_data", None)  # CPython's encoded mapping: compared without decoding
    env = raw if isinstance(raw, dict) else dict(os.environ)
    if _cache.get("env") != env or _cache.get("extra") != len(_extra):  # _extra only grows
        named = [v for k, v in os.environ.items() if _SECRET_ENV_NAME.fullmatch(k)]
        values = {os.environ.get(name) or "" for name in _SECRET_ENV} | set(named) | _extra
        _cache["secrets"] = sorted((v for v in values if len(v) >= _SHORTEST_SECRET), key=len, reverse=True)
        _cache["secrets_json_plain"] = all(
            json.dumps(v, ensure_ascii=False) == f'"{v}"' == json_text.dumps(v) for v in _cache["secrets"]
        )
        _cache["env"], _cache["extra"] = dict(env), len(_extra)
    return _cache["secrets"]


_cache: dict[str, Any] = {}


def redact_text(text: str) -> str:
    return _redact_text(text, known_secrets())


def _redact_text(text: str, secrets: list[str]) -> str:
    if len(text) < _SHORTEST_SECRET:  # shorter than any secret kept (register_secret) and any pattern's match
        return text
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if len(text) < _SHORTEST_MATCH:
        return text
    lowered: str | None = None
    for pattern, literals, folded in _PATTERNS:
        haystack = text
        if folded:
            lowered = haystack = text.lower() if lowered is None else lowered
        if any(literal in haystack for literal in literals):
            text = pattern.sub(REDACTED, text)
            lowered = None  # the text changed
    return text


def redact(value: Any, *, keep_replay: bool = False) -> Any:
    """Redact secrets in any JSON-like value; header-like keys are blanked whatever they hold.

    ``keep_replay`` leaves the replay keys untouched: only for what is stored to be sent back.
    """
    secrets = known_secrets()  # looked up once for the whole value
    if isinstance(value, dict | list) and _nothing_to_redact(value, secrets):
        return value
    return _redact(value, keep_replay, secrets)


def _nothing_to_redact(value: dict | list, secrets: list[str]) -> bool:
    """True when no secret, pattern or header key can be in ``value``; False when unsure.

    One encoding (``json_text``, orjson) and a few substring searches instead of a Python call per string: a
    round's request (tools, history) is thousands of strings, and almost never holds a secret. Only
    when none of the secrets has a character JSON escapes (else its value might be in the text in
    another spelling). The patterns' literals and the header keys need no escaping.
    """
    if not _cache.get("secrets_json_plain", False):
        return False
    try:
        text = json_text.dumps(value)
    except (TypeError, ValueError):
        return False
    if any(secret in text for secret in secrets):
        return False
    lowered = text.lower()
    if any(f'"{key}"' in lowered for key in _HEADER_KEYS):
        return False
    return not any(
        literal in (lowered if folded else text) for _, literals, folded in _PATTERNS for literal in literals
    )


def _redact(value: Any, keep_replay: bool, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return _redact_text(value, secrets)
    if isinstance(value, list):
        return [_redact(v, keep_replay, secrets) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and key.lower() in _HEADER_KEYS:
                out[key] = REDACTED
            elif keep_replay and key in REPLAY_KEYS:
                out[key] = item
            else:
                out[key] = _redact(item, keep_replay, secrets)
        return out
    return value


def without_media_data(value: Any) -> Any:
    """A value with every ``media`` list (tool results, user images in a stored request's messages)
    shown as type and size, never the bytes."""
    if isinstance(value, list):
        return [without_media_data(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: without_media_data(v) for k, v in value.items() if k != "media"}
    if "media" in value:
        media = value["media"]
        out["media"] = (
            [
                {
                    "kind": m.get("kind"),
                    "mime_type": m.get("mime_type"),
                    "bytes": len(m.get("data") or "") * 3 // 4,
                }
                for m in media
                if isinstance(m, dict)
            ]
            if isinstance(media, list)
            else media
        )
    return out


def shown(value: Any) -> Any:
    """What may be shown of a stored value: sealed blobs as "[opaque, N bytes]", tool media as type
    and size, secrets removed."""
    return redact(summarise(without_media_data(value)))


# Streamed text: one string field besides the round's index. The recorder redacts every delta of every
# stream; the generic walk below (its fields, a lookup of the secrets per field) was a fifth of a
# worker's CPU per streamed chunk (bench/stream, docs/performance.md, session 23).
_TEXT_DELTAS = (TextDelta, ReasoningDelta)


def redact_event(event: Any) -> Any:
    """An engine event (a dataclass) with every string, list and dict field redacted.

    The recorder applies this once to each event before it is stored, logged or published, so error
    messages (a provider quoting the key it was sent, issue 16 H2) are covered like text and results.
    """
    if type(event) in _TEXT_DELTAS:
        text = event.text
        if len(text) < _SHORTEST_SECRET:  # no secret kept (register_secret) nor pattern fits in it
            return event
        cleaned = _redact_text(text, known_secrets())
        return event if cleaned == text else dataclasses.replace(event, text=cleaned)
    changes = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.init and isinstance(value, str | list | dict):
            cleaned = redact(value, keep_replay=True)  # replay blocks go back to the provider as received
            if cleaned != value:
                changes[f.name] = cleaned
    return dataclasses.replace(event, **changes) if changes else event
