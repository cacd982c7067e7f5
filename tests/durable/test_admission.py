"""Issue 15 target 4 on a live worker: the runs it carries are bounded by its capacity
(``CLEARLOOP_WORKER_RUNS``), not by its Celery threads, and a run cut by a shutdown is handed back.

- a worker with 2 Celery threads and room for 3 runs carries 3 of 5 runs at once, never 4, and
  every run ends once (one delivery each);
- a worker stopped (SIGTERM) mid-run hands the run back without counting a delivery; the next
  worker finishes it from its stored rows, with one stored round;
- with two workers, a run one of them holds for its slot is not enqueued again by the other's sweep.
"""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

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


def _answers(node: str) -> bool:
    from chatapp.celery import app

    return bool(app.control.ping(destination=[node], timeout=0.5, limit=1))


def _queued_longest(run_ids: list[int]) -> float:
    queued = Run.objects.filter(pk__in=run_ids, status="queued").values_list("created_at", flat=True)
    return max(((timezone.now() - created).total_seconds() for created in queued), default=0.0)


def test_with_two_workers_no_sweep_enqueues_a_run_the_other_worker_holds(cast, demo_tools, durable_stack):
    """Two workers, each with room for one run and two Celery threads: of four runs each carries one
    and holds one for its slot, longer than the queued grace. Neither sweep may take the other's held
    run for lost (its message is there, waiting its turn) and enqueue it again."""
    env = {
        "CLEARLOOP_WORKER_RUNS": "1",
        "CLEARLOOP_RUN_QUEUED_GRACE_SECONDS": "1",
        "CLEARLOOP_RUN_SWEEP_SECONDS": "1",
    }
    durable_stack.start_worker(concurrency=2, **env)
    second_log = durable_stack.stack.log_dir / "worker-b.log"
    logs_before = [len(durable_stack.worker_log()), second_log.stat().st_size if second_log.exists() else 0]
    second = durable_stack.stack.start_worker("worker-b", 2, node=f"b-{durable_stack.worker_name}", env=env)
    try:
        wait_until(lambda: _answers(f"b-{durable_stack.worker_name}"), 60, "the second worker")
        runs = []
        for name in ["alice", "bob", "ada", "otto"]:
            convo = Conversation.objects.create(owner=cast[name], provider=demo_tools.provider)
            runs.append(start_run(convo, LONG * 3).pk)
        # Past the grace, a beat and a sweep: each sweep has had its chance to take the run for lost.
        wait_until(lambda: _queued_longest(runs) > 3, 60, "a run held for its slot past the grace")
        for run_id in runs:
            run = wait_run(run_id, timeout=120)
            assert run.status == "succeeded", (run.status, run.error)
            assert run.deliveries == 1
            assert Message.objects.filter(run=run, role="assistant").count() == 1
        assert second.poll() is None
    finally:
        durable_stack.stack.stop_one("worker-b")
    logs = durable_stack.worker_log()[logs_before[0] :] + second_log.read_bytes()[logs_before[1] :].decode()
    assert "enqueuing it again" not in logs, [line for line in logs.splitlines() if "again" in line]
