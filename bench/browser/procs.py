"""CPU and memory of the processes we measure, read from /proc. Not a test.

CPU is utime+stime of a process (``/proc/PID/stat``), in ms. PostgreSQL backends are found by
database name (``pg_stat_activity``) and sampled every ``interval`` s, so the work a backend did is
counted even if it exits before the window ends (up to one interval of it may be missed: the send
path of a web process without a connection pool opens a backend per request).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_ms(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            parts = f.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # fields after the command: state(0) ... utime(11) stime(12)
    return (int(parts[11]) + int(parts[12])) * 1000 / TICK


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE / 2**20
    except (FileNotFoundError, ProcessLookupError):
        return 0.0


@dataclass
class Sampler:
    """Samples named processes (CPU, peak RSS) and the PostgreSQL backends of one database."""

    pids: dict[str, int]
    pg_dsn: str | None = None
    pg_database: str | None = None
    interval: float = 0.2
    first: dict[str, float] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    peak_rss: dict[str, float] = field(default_factory=dict)
    pg_first: dict[int, float] = field(default_factory=dict)
    pg_last: dict[int, float] = field(default_factory=dict)
    pg_peak_backends: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn = None

    def start(self) -> Sampler:
        if self.pg_dsn:
            import psycopg

            for _attempt in range(20):  # the server may be full for a moment (shared machine)
                try:
                    self._conn = psycopg.connect(self.pg_dsn, autocommit=True)
                    break
                except psycopg.OperationalError:
                    threading.Event().wait(0.5)
        self.sample()
        self.first = dict(self.last)
        self.pg_first = dict(self.pg_last)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def _backends(self) -> list[int]:
        if self._conn is None:
            return []
        rows = self._conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (self.pg_database,),
        ).fetchall()
        return [r[0] for r in rows]

    def sample(self) -> None:
        for name, pid in self.pids.items():
            value = cpu_ms(pid)
            if value is not None:
                self.last[name] = value
            self.peak_rss[name] = max(self.peak_rss.get(name, 0.0), rss_mb(pid))
        backends = self._backends()
        self.pg_peak_backends = max(self.pg_peak_backends, len(backends))
        for pid in backends:
            value = cpu_ms(pid)
            if value is not None:
                self.pg_first.setdefault(pid, value if not self._thread else 0.0)
                self.pg_last[pid] = value

    def stop(self) -> dict[str, float]:
        """CPU ms used by each process (and ``postgres``) since ``start``."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample()
        if self._conn is not None:
            self._conn.close()
        used = {name: self.last.get(name, 0.0) - self.first.get(name, 0.0) for name in self.pids}
        if self.pg_dsn:
            used["postgres"] = sum(v - self.pg_first.get(pid, 0.0) for pid, v in self.pg_last.items())
        return used
