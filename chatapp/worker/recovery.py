"""What a worker does when it starts and stops (hooked to Celery's signals in ``chatapp/tasks.py``).

On start: beat (``liveness.py``), start the sweeper (``sweep.py``), which re-enqueues runs that no
live lease covers (a killed worker's runs, or a run whose message was lost entirely; a duplicate is
harmless: the lease runs a run once), and build the runtime ahead of the first run (``warm_up``).
On stop: admit no more runs, give the carried ones time to end and hand back the rest
(``carrier.py``), then close the MCP children and the shared HTTP client (no orphans, R-MCP-5).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def on_worker_ready(enqueue: Callable[[int], Any]) -> None:
    from chatapp.worker.backlog import run_queue_backlog
    from chatapp.worker.liveness import held_by_live_workers, start_heartbeat
    from chatapp.worker.runtime import current_runtime
    from chatapp.worker.sweep import start_sweeper

    def enqueue_one(run_id: int) -> None:
        enqueue(run_id)  # Celery's delay returns an AsyncResult nobody reads

    def held() -> set[int]:
        """The runs this worker's Celery threads hold for a slot: not lost (``sweep.py``)."""
        runtime = current_runtime()
        return runtime.runs.waiting if runtime is not None else set()

    def held_anywhere() -> set[int]:
        return held() | held_by_live_workers()  # its own at once, the others' as of their last beat

    # Nothing here touches the database itself: a database that refuses connections at this moment
    # (it happened under load) must not leave the worker without its heartbeat and its sweep; both
    # threads retry until it answers (the orphan scan is the sweep's first step).
    start_heartbeat(held)  # every beat says which runs it holds
    start_sweeper(enqueue_one, run_queue_backlog, held_anywhere)
    threading.Thread(target=warm_up, name="clearloop-warmup", daemon=True).start()


def warm_up() -> None:
    """Build what every run uses before the first one asks: the driver's modules (~170 ms to import)
    and the runtime with its tokenizer (~260 ms). Otherwise the first run after a worker starts pays
    both, and the tokenizer's build ran on the loop every run shares (docs/performance.md, session 17)."""
    try:
        import chatapp.worker.driver  # noqa: F401 - imported for its side effect: loaded once, now
        from chatapp.worker.runtime import get_runtime

        get_runtime()
    except Exception:  # noqa: BLE001 - only a head start: the first run builds what is missing
        log.warning("warming the worker up failed; its first run will", exc_info=True)


def on_worker_closing() -> None:
    from chatapp.worker.runtime import current_runtime

    runtime = current_runtime()
    if runtime is not None:
        runtime.runs.close()


def on_worker_shutdown(enqueue: Callable[[int], Any]) -> None:
    """Give the carried runs ``WORKER_DRAIN_SECONDS`` to end; enqueue the ones handed back unfinished."""
    from chatapp.worker.runtime import shutdown_runtime

    for run_id in shutdown_runtime():
        try:
            enqueue(run_id)
        except Exception:  # noqa: BLE001 - the broker is away: the sweep of a live worker enqueues it
            log.warning("run %s: could not enqueue it again; the sweep will", run_id, exc_info=True)
