"""JSON text of a run's values, encoded once, fast.

The worker encodes every frame it stores or publishes; a round's frame holds its whole request
(10-20 KB of history and tools), and the standard library's encoder was 8 % of the worker's CPU
(docs/performance.md, session 15). orjson writes the same JSON about ten times faster: compact, with
non-ASCII characters as they are (what ``json.dumps(value, ensure_ascii=False)`` gives, without
the spaces). What orjson refuses (keys that are not strings, integers past 64 bits, lone surrogates,
other types) goes through the standard encoder as before, so nothing that encoded before fails now.
One difference: NaN and infinities are written as ``null`` (the standard encoder wrote ``NaN``, which
neither PostgreSQL's ``jsonb`` nor a browser's ``JSON.parse`` accepts).

Not for the audit chain: its digests pin ``audit/chain.canonical_json``'s exact bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# A surrogate code point alone (a model's "\ud800" escape decodes to one) has no UTF-8 form: neither
# PostgreSQL nor a socket takes it. It is stored and sent as U+FFFD, as NUL is (chatapp/nul.py).
_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError: see the module's docstring
        return _SURROGATE.sub("\ufffd", json.dumps(value, ensure_ascii=False))


def dumps_bytes(value: Any) -> bytes:
    """``dumps`` as UTF-8 bytes (what goes on a socket or to Redis)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return dumps(value).encode()
