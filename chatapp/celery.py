"""The Celery app. Workers run with the threads pool; see ``chatapp/worker/runtime.py``."""

from __future__ import annotations

import logging
import os
import threading
import time

from celery import Celery
from celery.signals import worker_process_shutdown, worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatapp.settings")

# DjangoTask gives every task delay_on_commit (enqueue only after the transaction commits).
app = Celery("clearloop", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["chatapp"])


@worker_shutdown.connect
@worker_process_shutdown.connect
def _close_runtime(**_: object) -> None:
    # Close MCP children and the shared HTTP client when the worker exits (no orphans, R-MCP-5).
    from chatapp.worker.runtime import shutdown_runtime

    shutdown_runtime()


@worker_ready.connect
def _recover_orphans(**_: object) -> None:
    # A task lost with a killed worker comes back when Redis redelivers it (visibility timeout); this
    # also catches runs whose message was lost entirely. The lease makes a duplicate harmless.
    from chatapp.tasks import execute_run
    from chatapp.worker.lease import orphaned_runs

    for run_id in orphaned_runs():
        execute_run.delay(run_id)
    threading.Thread(target=_sweep_abandoned_runs, name="clearloop-sweep", daemon=True).start()


def _sweep_abandoned_runs() -> None:
    """Every worker looks for runs whose worker died, so recovery does not wait for a restart or for
    Redis's visibility timeout. Several workers may enqueue the same run: the lease runs it once."""
    from django.conf import settings
    from django.db import close_old_connections

    from chatapp.tasks import execute_run
    from chatapp.worker.lease import abandoned_runs

    while True:
        time.sleep(settings.RUN_SWEEP_SECONDS)
        try:
            close_old_connections()
            for run_id in abandoned_runs(grace_seconds=settings.RUN_LEASE_SECONDS):
                execute_run.delay(run_id)
        except Exception:  # noqa: BLE001 - the next sweep tries again
            logging.getLogger(__name__).warning("sweeping abandoned runs failed", exc_info=True)
