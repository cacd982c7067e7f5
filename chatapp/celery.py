"""The Celery app. Workers run with the threads pool; see ``chatapp/worker/runtime.py``."""

from __future__ import annotations

import os

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
    # A task lost with a killed worker comes back when Redis redelivers it (visibility timeout); the
    # sweep also catches runs whose message was lost entirely. The lease makes a duplicate harmless.
    # Nothing here touches the database itself: a database that refuses connections at this moment
    # (it happened under load) must not leave the worker without its heartbeat and its sweep; both
    # threads retry until it answers.
    from chatapp.tasks import execute_run
    from chatapp.worker.liveness import start_heartbeat
    from chatapp.worker.sweep import start_sweeper

    start_heartbeat()
    start_sweeper(execute_run.delay)
