"""Celery tasks: thin, they take ids and hand the run to the worker runtime."""

from __future__ import annotations

import logging

from chatapp.celery import app

from chatapp.worker.lease import LeaseRefused, acquire_lease, release_lease

log = logging.getLogger(__name__)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def execute_run(run_id: int) -> None:
    from chatapp.worker.driver import drive_run
    from chatapp.worker.runtime import get_runtime

    try:
        lease = acquire_lease(run_id)
    except LeaseRefused as refused:
        log.info("run %s not started: %s", run_id, refused)
        return
    runtime = get_runtime()
    try:
        runtime.run(drive_run(runtime, run_id, lease))
    finally:
        release_lease(run_id, lease)
