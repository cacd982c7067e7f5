"""Handing a committed run to the task queue, without losing it when the broker is away.

The run row is committed first (so a worker never looks for a run that is not there yet), then the
task is published. If the broker cannot be reached the run stays ``queued``: the request still
succeeds, the user is told it will start when the queue is back, and the workers' sweep enqueues it
again (``RUN_QUEUED_GRACE_SECONDS``, see ``chatapp/worker/sweep.py``). Nothing is left half done.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db import transaction

log = logging.getLogger(__name__)

BROKER_DOWN_NOTICE = (
    "Your message is saved, but the task queue cannot be reached right now; the answer will start "
    "by itself as soon as it is back."
)


@dataclass
class Dispatch:
    run_id: int
    sent: bool | None = None  # None until the transaction commits

    def send(self) -> None:
        # By name: services never import the tasks module (imports run one way, see
        # tests/web/test_import_layers.py).
        from chatapp.celery import EXECUTE_RUN, app

        try:
            # ``queued_at``: the first mark of the run's start spans (chatapp/worker/start_spans.py).
            # ``ignore_result``: the task stores none (its results are the run's rows), and by name
            # Celery cannot know that, so it subscribed to the task's result channel on every send
            # (and unsubscribed once the unused AsyncResult was collected): two Redis round trips
            # per send in daphne (docs/performance.md, session 20).
            app.send_task(
                EXECUTE_RUN, args=(self.run_id,), kwargs={"queued_at": time.time()}, ignore_result=True
            )
            self.sent = True
        except Exception:  # noqa: BLE001 - broker errors come from kombu, redis or sockets alike
            self.sent = False
            log.warning("run %s: the broker is unreachable; it stays queued for the sweep", self.run_id)

    @property
    def notice(self) -> str:
        return BROKER_DOWN_NOTICE if self.sent is False else ""


def enqueue_on_commit(run_id: int) -> Dispatch:
    dispatch = Dispatch(run_id)
    transaction.on_commit(dispatch.send)
    return dispatch
