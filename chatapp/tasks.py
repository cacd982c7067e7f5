"""Celery tasks: thin, they take ids and hand the run to the worker runtime (and return)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from celery.exceptions import Reject
from celery.signals import worker_process_shutdown, worker_ready, worker_shutdown, worker_shutting_down

from chatapp.celery import app
from chatapp.worker import recovery
from chatapp.worker.lease import LeaseHeld, LeaseRefused, TakenLease, release_lease, take_lease
from chatapp.worker.liveness import is_alive

if TYPE_CHECKING:
    from chatapp.worker.runtime import WorkerRuntime

log = logging.getLogger(__name__)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def execute_run(run_id: int, queued_at: float | None = None) -> None:
    """Admit the run into this worker's runtime and return; the run goes on without this thread.

    The message stays unacknowledged while the worker is full (so the broker keeps it for a worker
    with room) and until the lease is taken; after that the lease, the heartbeat and the sweep
    recover the run if this worker dies (``chatapp/worker/carrier.py``). ``queued_at``: when the
    sender's transaction committed (the first of the run's start spans).
    """
    from chatapp.worker.carrier import Closing
    from chatapp.worker.driver import drive_segment, load_start_ahead
    from chatapp.worker.runtime import get_runtime
    from chatapp.worker.start_spans import StartSpans

    spans = StartSpans(run_id)
    if queued_at is not None:
        spans.mark("committed", queued_at)
    spans.mark("received")
    runtime = get_runtime()
    try:
        runtime.runs.admit(run_id)
        spans.mark("admitted")
    except Closing:
        raise Reject("the worker is shutting down", requeue=True) from None
    with runtime.pacer.turn():  # one start at a time while the loop runs late (start_pacer.py)
        # The context of a first delivery is read while the lease is taken (two DB threads at once).
        ahead = runtime.db_soon(load_start_ahead, run_id)
        try:
            taken = _take_lease(runtime, run_id)
            if taken is None:
                runtime.runs.release()
                return
            spans.mark("leased")
        except BaseException:
            runtime.runs.release()
            raise
    lease, read = taken.owner, ahead if taken.first else None
    try:
        runtime.runs.start(runtime.loop, run_id, lambda: drive_segment(runtime, run_id, lease, spans, read))
    except RuntimeError:
        runtime.db_now(release_lease, run_id, lease)
        raise Reject("the worker runtime is closed", requeue=True) from None


def _take_lease(runtime: WorkerRuntime, run_id: int) -> TakenLease | None:
    # Lease writes go through the runtime's few DB threads (their connections, not one per Celery
    # thread), straight from this thread: through the loop, each admission also waited for the loop's
    # turn behind the frames of every run the worker carries.
    try:
        return runtime.db_now(take_lease, run_id)
    except LeaseHeld as held:
        alive = runtime.db_now(is_alive, held.owner)
        if held.status == "queued" and alive:
            # Approved while the segment that asked is still ending (it holds the lease until it
            # releases it, within moments): look again shortly rather than leave it to the sweep.
            execute_run.apply_async((run_id,), countdown=1)
        elif alive:
            # A live worker drives it; if that worker dies, the sweep takes the run back.
            log.info("run %s is driven by a live worker (%s); nothing to do", run_id, held.owner)
        else:
            # Maybe a live worker has it, maybe a dead one: look again once the lease has expired.
            log.info("run %s is leased; retrying in %.0f s", run_id, held.retry_in)
            execute_run.apply_async((run_id,), countdown=held.retry_in)
    except LeaseRefused as refused:
        log.info("run %s not started: %s", run_id, refused)
    return None


# --- MCP resources and prompts for the chat page (R-MCP-7) ------------------------------------
@app.task(ignore_result=False, soft_time_limit=30)
def mcp_list_context() -> dict:
    from chatapp.worker import mcp_context
    from chatapp.worker.runtime import get_runtime

    return get_runtime().run(mcp_context.list_context(), timeout=30)


@app.task(ignore_result=False, soft_time_limit=30)
def mcp_read_resource(server: str, uri: str) -> dict:
    from chatapp.worker import mcp_context
    from chatapp.worker.runtime import get_runtime

    return get_runtime().run(mcp_context.read_resource(server, uri), timeout=30)


@app.task(ignore_result=False, soft_time_limit=30)
def mcp_expand_prompt(server: str, name: str, arguments: dict) -> dict:
    from chatapp.worker import mcp_context
    from chatapp.worker.runtime import get_runtime

    return get_runtime().run(mcp_context.expand_prompt(server, name, arguments), timeout=30)


# --- worker start and stop ---------------------------------------------------------------------
@worker_ready.connect
def _worker_ready(**_: object) -> None:
    recovery.on_worker_ready(execute_run.delay)


@worker_shutting_down.connect
def _worker_closing(**_: object) -> None:
    # Sent from the signal handler as the warm shutdown begins: admit nothing more, so the waiting
    # tasks hand their messages back and Celery's own wait for its threads ends at once.
    recovery.on_worker_closing()


@worker_shutdown.connect
@worker_process_shutdown.connect
def _worker_stopping(**_: object) -> None:
    recovery.on_worker_shutdown(execute_run.delay)
