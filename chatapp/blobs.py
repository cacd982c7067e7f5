"""Large values stored once, by content address (issue 16 item 8, review L10).

One large tool argument or result used to be written about a dozen times: in each ``tool_call``
event, the call's row, the round's response (raw and parsed), every later round's request and that
round's event (and a long answer in its message twice, the run and the run's event). Now every string
of at least ``LARGE_VALUE_MIN_CHARS`` characters in those rows is written once to ``Blob`` (keyed by
the sha256 of its UTF-8 text) and the rows hold a reference:

* in JSON columns, ``{"$blob": "<sha256>", "chars": N}`` in place of the string; a stored object that
  itself has a ``$blob``, ``$esc`` or ``$parsed`` key is wrapped as ``{"$esc": {...}}``, so no value a
  model or a tool produced can pose as a reference;
* a model's tool call is kept twice in a response, as the raw arguments text and parsed: when the
  text is large and parses to exactly the parsed object, ``arguments`` is stored as
  ``{"$parsed": "arguments_raw"}`` and parsed again on load (one copy instead of two);
* in text columns, ``REF_PREFIX + sha256``; text that starts with ``REF_PREFIX`` or ``ESC_PREFIX`` is
  stored behind ``ESC_PREFIX``.

The model fields (``models/fields.py``) pack on save and unpack on load, so every reader - the trace
API, the chat page, exports, the admin, the audit check, a run rebuilt on resume - gets the whole value
and none of them knows about references. Rows written before this format hold no references and load
as they are. The audit chain pins digests of whole values, so ``verify_audit`` recomputes them through
the references; it also checks that each blob still matches its address (``tampered``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from typing import Any

from django.apps import apps
from django.conf import settings

log = logging.getLogger(__name__)

REF_KEY = "$blob"
ESC_KEY = "$esc"
PARSED_KEY = "$parsed"
_OWN_KEYS = (REF_KEY, ESC_KEY, PARSED_KEY)
REF_PREFIX = "\u2060blob:sha256:"  # a word joiner first: no text a person types starts like this
ESC_PREFIX = "\u2060esc:"
_REFERENCE = re.compile(r'(?:"\$blob": ?"|\u2060blob:sha256:)([0-9a-f]{64})')


def address(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _large(value: str) -> bool:
    return len(value) >= settings.LARGE_VALUE_MIN_CHARS


def _store(found: dict[str, str], alias: str) -> None:
    if not found:
        return
    blob = apps.get_model("chatapp", "Blob")
    # In key order: two transactions writing the same new values take their row locks in one order.
    rows = [blob(sha256=key, chars=len(found[key]), data=found[key]) for key in sorted(found)]
    # Another row (or another transaction) may hold the same value already: one copy is kept.
    blob.objects.using(alias).bulk_create(rows, ignore_conflicts=True)


def _load(keys: set[str], alias: str) -> dict[str, str]:
    if not keys:
        return {}
    blob = apps.get_model("chatapp", "Blob")
    rows = dict(blob.objects.using(alias).filter(sha256__in=keys).values_list("sha256", "data"))
    for key in keys - rows.keys():
        log.error("a stored row refers to large value %s, which is missing", key)
    return rows


def missing(key: str) -> str:
    # Shown in place of a value whose blob was deleted: the audit check reports the row as changed.
    return f"[missing large value sha256:{key}]"


# --- JSON values ---------------------------------------------------------------------------------
def packed_json(value: Any, alias: str, text: str | None = None) -> str:
    """The JSON text of ``pack(value, alias)``; ``text``: the value's own, when the caller has it.
    Most values hold no large string and no key of ours: their text tells so (``_nothing_to_pack``)
    and the walk is skipped (on a round's 14 KB frame the walk took 0.56 ms, the check 0.03 ms)."""
    from chatapp import json_text

    text = json_text.dumps(value) if text is None else text
    if _nothing_to_pack(text):
        return text
    return json_text.dumps(pack(value, alias))


def _nothing_to_pack(text: str) -> bool:
    """True when the JSON ``text`` has no string of ``LARGE_VALUE_MIN_CHARS`` characters or more and
    no ``$blob``, ``$esc`` or ``$parsed`` key; False when unsure.

    A string's encoded form is at least as long as the string, and it lies between two unescaped
    quotes. Escaped backslashes and quotes are first replaced by two letters each (same length), so
    the pieces between the remaining quotes are whole strings (or what lies between them, which can
    only make this answer "unsure")."""
    if len(text) < settings.LARGE_VALUE_MIN_CHARS:
        longest = len(text)
    else:
        plain = text.replace("\\\\", "xx").replace('\\"', "xx")
        longest = max(map(len, plain.split('"')))
    if longest >= settings.LARGE_VALUE_MIN_CHARS:
        return False
    return not any(f'"{key}"' in text for key in _OWN_KEYS)


def pack(value: Any, alias: str) -> Any:
    """``value`` with its large strings replaced by references (their blobs written on ``alias``)."""
    found: dict[str, str] = {}
    packed = _pack(value, found)
    _store(found, alias)
    return packed


def _pack(value: Any, found: dict[str, str]) -> Any:
    if isinstance(value, str):
        if not _large(value):
            return value
        key = address(value)
        found[key] = value
        return {REF_KEY: key, "chars": len(value)}
    if isinstance(value, list | tuple):
        return [_pack(item, found) for item in value]
    if isinstance(value, dict):
        packed = {key: _pack(item, found) for key, item in value.items()}
        if _parses_to(value.get("arguments_raw"), value.get("arguments")):
            packed["arguments"] = {PARSED_KEY: "arguments_raw"}
        return {ESC_KEY: packed} if any(key in value for key in _OWN_KEYS) else packed
    return value


def _parses_to(raw: Any, parsed: Any) -> bool:
    """Is ``parsed`` exactly what ``raw`` (a large text) parses to, down to number types?"""
    if not (isinstance(raw, str) and isinstance(parsed, dict) and _large(raw)):
        return False
    try:
        again = json.loads(raw)
    except ValueError:
        return False
    return json.dumps(again, sort_keys=True) == json.dumps(parsed, sort_keys=True)


def _is_ref(value: dict[str, Any]) -> bool:
    return len(value) == 2 and isinstance(value.get(REF_KEY), str) and "chars" in value


def _refs(value: Any, keys: set[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _refs(item, keys)
    elif isinstance(value, dict):
        if _is_ref(value):
            keys.add(value[REF_KEY])
            return
        inner = value[ESC_KEY] if len(value) == 1 and isinstance(value.get(ESC_KEY), dict) else value
        for item in inner.values():
            _refs(item, keys)


def unpack(value: Any, alias: str) -> Any:
    """A stored JSON value with every reference replaced by its text (one query for all of them)."""
    keys: set[str] = set()
    _refs(value, keys)
    if not keys and not _has_own_key(value):
        return value
    return _unpack(value, _load(keys, alias))


def _has_own_key(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_own_key(item) for item in value)
    if isinstance(value, dict):
        return any(key in value for key in _OWN_KEYS) or any(_has_own_key(v) for v in value.values())
    return False


def _unpack(value: Any, texts: dict[str, str]) -> Any:
    if isinstance(value, list):
        return [_unpack(item, texts) for item in value]
    if not isinstance(value, dict):
        return value
    if _is_ref(value):
        key = value[REF_KEY]
        return texts.get(key, missing(key))
    escaped = len(value) == 1 and isinstance(value.get(ESC_KEY), dict)
    inner = value[ESC_KEY] if escaped else value  # an object that had a "$..." key of its own
    out = {key: _unpack(item, texts) for key, item in inner.items()}
    # The marker as stored (a model's own {"$parsed": ...} object is stored escaped, never like this).
    if inner.get("arguments") == {PARSED_KEY: "arguments_raw"}:
        out["arguments"] = json.loads(out["arguments_raw"])
    return out


# --- text values ---------------------------------------------------------------------------------
def pack_text(text: str, alias: str) -> str:
    if _large(text):
        key = address(text)
        _store({key: text}, alias)
        return REF_PREFIX + key
    if text.startswith((REF_PREFIX, ESC_PREFIX)):
        return ESC_PREFIX + text
    return text


def unpack_text(stored: str, alias: str) -> str:
    if stored.startswith(ESC_PREFIX):
        return stored[len(ESC_PREFIX) :]
    if stored.startswith(REF_PREFIX):
        key = stored[len(REF_PREFIX) :]
        return _load({key}, alias).get(key, missing(key))
    return stored


# --- what refers to what -------------------------------------------------------------------------
def references_containing(text: str) -> Any:
    """The stored references (text-column form) of every blob containing ``text``, case-insensitive.
    A search over a large-text column: ``Q(col__icontains=text) | Q(col__in=references_containing(text))``."""
    from django.db.models import Value
    from django.db.models.functions import Concat

    blob = apps.get_model("chatapp", "Blob")
    return blob.objects.filter(data__icontains=text).values_list(Concat(Value(REF_PREFIX), "sha256"))


def references(raw: str) -> set[str]:
    """The blob keys a stored column's raw text (JSON or text, as the database holds it) refers to."""
    return set(_REFERENCE.findall(raw or ""))


def referenced_by_run(run_id: int) -> set[str]:
    """Every blob the rows of one run refer to (read raw, without loading the values)."""
    from django.db.models import TextField
    from django.db.models.functions import Cast

    keys: set[str] = set()
    # Through the app registry, as tampered() does: chatapp.models' fields import this module.
    columns = (
        (apps.get_model("chatapp", "RunEvent"), ("payload",)),
        (apps.get_model("chatapp", "Round"), ("request", "response")),
        (apps.get_model("chatapp", "ToolCall"), ("arguments", "result")),
    )
    for model, names in columns:
        raw = model.objects.filter(run_id=run_id).annotate(
            **{f"raw_{name}": Cast(name, TextField()) for name in names}
        )
        for row in raw.values_list(*(f"raw_{name}" for name in names)):
            for text in row:
                keys |= references(text)
    return keys


def tampered(alias: str = "default") -> list[str]:
    """Keys of blobs whose text no longer hashes to their key (edited in the database)."""
    blob = apps.get_model("chatapp", "Blob")
    rows = blob.objects.using(alias).order_by("sha256").values_list("sha256", "data")
    return [key for key, data in rows.iterator(chunk_size=200) if address(data) != key]
