"""Rendered markdown kept per process: the HTML of a text, looked up by the text's digest.

The markdown renderer (``markdown.py``) is a pure function of its text, so its output can be kept
without invalidation: a changed answer is a different text, and a changed renderer is a new process.
The cache is bounded by the size of the HTML it holds, in characters (``CLEARLOOP_MARKDOWN_CACHE_MB``,
default 32; 0 keeps nothing), least recently used first out; one HTML larger than an eighth of it is
not kept, so a single huge answer cannot empty it. Keys are 32-byte BLAKE2b digests, not the texts,
so the bound counts what is held. Views render in several threads of one process: one lock guards
the cache, not the rendering.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

from cachetools import LRUCache
from django.conf import settings

_lock = threading.Lock()
_cache: LRUCache | None = None


def _store() -> LRUCache | None:
    global _cache
    if _cache is None and settings.MARKDOWN_CACHE_BYTES:
        _cache = LRUCache(maxsize=settings.MARKDOWN_CACHE_BYTES, getsizeof=len)
    return _cache


def kept(text: str, render: Callable[[str], str]) -> str:
    """``render(text)``, from the cache when this process rendered the same text before."""
    store = _store()
    if store is None:
        return render(text)
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=32).digest()
    with _lock:
        html = store.get(key)
    if html is None:
        html = render(text)
        if len(html) <= store.maxsize // 8:
            with _lock:
                store[key] = html
    return html


def clear() -> None:
    """Forget every kept HTML (tests; a process that changed its renderer's settings)."""
    with _lock:
        if _cache is not None:
            _cache.clear()
