"""The kernel's TCP counters for refused connections (``/proc/net/netstat``, what ``nstat`` reads).

A cell's sends open their connections at once; when the server's accept queue is full the kernel drops
or resets them, and the client sees a slow connect or a ``ReadError`` with nothing in the server's log
(docs/performance.md, session 20). The counters are machine-wide: read around a cell, they count that
cell's refusals only while nothing else on the machine opens connections in bursts.
"""

from __future__ import annotations

from pathlib import Path

WATCHED = ("ListenOverflows", "ListenDrops", "SyncookiesSent", "SyncookiesFailed", "TCPAbortOnData")
# What a full accept queue does to a connection; TCPAbortOnData (a reset sent by a socket closed with
# unread data: clients closing their websockets, too) is recorded beside them but is not one.
REFUSALS = ("ListenOverflows", "ListenDrops", "SyncookiesFailed")
SOURCE = Path("/proc/net/netstat")


def tcp_ext() -> dict[str, int]:
    """The watched ``TcpExt`` counters now; empty where the kernel does not expose them."""
    try:
        lines = SOURCE.read_text().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            counters = dict(zip(names.split()[1:], (int(v) for v in values.split()[1:]), strict=False))
            return {name: counters[name] for name in WATCHED if name in counters}
    return {}


def since(before: dict[str, int]) -> dict[str, int]:
    """How much each watched counter grew since ``before``."""
    return {name: value - before[name] for name, value in tcp_ext().items() if name in before}


def refused(counters: dict[str, int]) -> bool:
    """Whether the growth ``counters`` (``since``) shows connections the accept queue turned away."""
    return any(counters.get(name, 0) for name in REFUSALS)
