"""Issue 15 target 4 on a live worker: the runs it carries are bounded by its capacity
(``CLEARLOOP_WORKER_RUNS``), not by its Celery threads, and a run cut by a shutdown is handed back.

- a worker with 2 Celery threads and room for 3 runs carries 3 of 5 runs at once, never 4, and
  every run ends once (one delivery each);
- a worker stopped (SIGTERM) mid-run hands the run back without counting a delivery; the next
  worker finishes it from its stored rows, with one stored round.
"""

from __future__ import annotations

import time

import pytest

from chatapp.models import Conversation, Message, Run
from chatapp.services.runs import start_run
from tests.durable.harness import wait_run, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

LONG = "Tell me a long story about durable runs, " + "crash after crash, " * 8


def _carried(run_ids: list[int]) -> int:
    return Run.objects.filter(pk__in=run_ids, status="running").exclude(lease_owner="").count()


def test_a_worker_carries_runs_up_to_its_capacity_not_its_threads(cast, demo_tools, durable_stack):
    durable_stack.start_worker(concurrency=2, CLEARLOOP_WORKER_RUNS="3")
    owners = ["alice", "alice", "bob", "ada", "otto"]  # within each user's in-flight limit
    runs = []
    for name in owners:
        convo = Conversation.objects.create(owner=cast[name], provider=demo_tools.provider)
        runs.append(start_run(convo, LONG).pk)
    most = 0
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        most = max(most, _carried(runs))
        if Run.objects.filter(pk__in=runs, status__in=("succeeded", "failed", "cancelled")).count() == 5:
            break
        time.sleep(0.05)
    assert most == 3, f"at most {most} runs carried at once by a worker with 2 threads and room for 3"
    for run_id in runs:
        run = wait_run(run_id, timeout=60)
        assert run.status == "succeeded" and "crash after crash" in run.final_text, (run.status, run.error)
        assert run.deliveries == 1
        assert run.events.filter(type="round_finished").count() == 1
        assert Message.objects.filter(run=run, role="assistant").count() == 1


def test_a_worker_stopped_mid_run_hands_it_back_and_the_next_worker_finishes_it(
    cast, demo_tools, durable_stack
):
    durable_stack.start_worker(CLEARLOOP_WORKER_DRAIN_SECONDS="0.5")
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    run = start_run(convo, LONG)
    wait_until(lambda: run.events.filter(type="delta").exists(), 60, "the answer streaming")
    durable_stack.stop_worker()  # SIGTERM: a warm shutdown
    run.refresh_from_db()
    assert run.status == "running" and run.lease_owner == "", (run.status, run.lease_owner)
    assert run.deliveries == 0, "a segment cut by a shutdown does not count towards the poison limit"
    assert "handed back unfinished" in durable_stack.worker_log()
    durable_stack.start_worker()
    run = wait_run(run.pk, timeout=90)
    assert run.status == "succeeded" and "crash after crash" in run.final_text, (run.status, run.error)
    assert run.deliveries == 1
    assert run.events.filter(type="round_finished").count() == 1
    assert Message.objects.filter(run=run, role="assistant").count() == 1
