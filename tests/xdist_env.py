"""Loaded first by ``make test`` (``-p tests.xdist_env``), before Django reads its settings.

``make test`` runs the suite in several pytest-xdist processes. Each has its own PostgreSQL test
database (tests/conftest.py), where conversation and run ids start at 1 again, so two processes would
publish frames for "run 1" on the same Redis channels, and their stacks' Celery workers would answer
each other's pings. Every process therefore gets a Redis database of its own: the one ``REDIS_URL``
names for the first (gw0), the one below it for the next (gw1 → 13 when ``REDIS_URL`` ends in /14).
A plain ``pytest`` (no xdist) is left alone.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit


def worker_redis_url(url: str, worker: str) -> str:
    index = int(worker.removeprefix("gw"))
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0)
    if db - index < 0:
        raise RuntimeError(f"REDIS_URL {url} leaves no Redis database for xdist worker {worker}")
    return urlunsplit(parts._replace(path=f"/{db - index}"))


_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and os.environ.get("REDIS_URL", "").startswith("redis"):
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], _worker)
