"""A test-only switch that SIGKILLs this worker process at a precise point of a run.

``CLEARLOOP_CRASH_AT=kind[:status]:n`` kills the process right after the n-th frame of that kind
(and tool-call status) was stored, e.g. ``round_finished:1``, ``tool_call:running:1``, ``delta:5``.
Unset (always, outside the crash tests) it costs one dictionary lookup per frame.
"""

from __future__ import annotations

import os
import signal
from typing import Any

_SPEC = os.environ.get("CLEARLOOP_CRASH_AT", "")
_seen: dict[str, int] = {}


def _key(kind: str, payload: dict[str, Any]) -> str:
    return f"{kind}:{payload.get('status')}" if kind == "tool_call" else kind


def after_stored(kind: str, payload: dict[str, Any]) -> None:
    if not _SPEC:
        return
    target, _, count = _SPEC.rpartition(":")
    key = _key(kind, payload)
    if key != target and kind != target:
        return
    _seen[target] = _seen.get(target, 0) + 1
    if _seen[target] == int(count):
        os.kill(os.getpid(), signal.SIGKILL)
