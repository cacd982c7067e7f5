"""What a worker does when it starts and stops (hooked to Celery's signals in ``chatapp/tasks.py``).

On start: beat (``liveness.py``) and start the sweeper (``sweep.py``), which re-enqueues runs that
no live lease covers (a task lost with a killed worker, or whose message was lost entirely). A
duplicate is harmless: the lease runs a run once. On stop: close the MCP children and the shared
HTTP client (no orphans, R-MCP-5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def on_worker_ready(enqueue: Callable[[int], Any]) -> None:
    from chatapp.worker.liveness import start_heartbeat
    from chatapp.worker.sweep import start_sweeper

    def enqueue_one(run_id: int) -> None:
        enqueue(run_id)  # Celery's delay returns an AsyncResult nobody reads

    # Nothing here touches the database itself: a database that refuses connections at this moment
    # (it happened under load) must not leave the worker without its heartbeat and its sweep; both
    # threads retry until it answers (the orphan scan is the sweep's first step).
    start_heartbeat()
    start_sweeper(enqueue_one)


def on_worker_shutdown() -> None:
    from chatapp.worker.runtime import shutdown_runtime

    shutdown_runtime()
