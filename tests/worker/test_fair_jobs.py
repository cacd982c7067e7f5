"""The DB threads' work queue serves the run with the least DB time first (chatapp/worker/fair_jobs.py)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from chatapp.worker.fair_jobs import RUN, FairJobs, outside_runs


def _queued(jobs: FairJobs, run_id: int | None, item: str) -> None:
    token = RUN.set(run_id)
    try:
        jobs.put(item)
    finally:
        RUN.reset(token)


def test_the_run_with_the_least_db_time_goes_first_and_jobs_for_no_run_before_any_run():
    jobs = FairJobs()
    jobs.timed(1, lambda: None)  # run 1 has had some DB time; run 2 none yet
    jobs.attained[1] = 0.5
    jobs.attained[3] = 0.1
    _queued(jobs, 1, "long run's next job")
    _queued(jobs, 3, "short run's last job")
    _queued(jobs, 2, "new run's first job")
    _queued(jobs, None, "frames of every run")
    _queued(jobs, 1, "long run's other job")
    order = [jobs.get_nowait() for _ in range(5)]
    assert order == [
        "frames of every run",
        "new run's first job",
        "short run's last job",
        "long run's next job",  # equal ranks keep their order
        "long run's other job",
    ]
    assert jobs.empty()


def test_timed_adds_the_jobs_time_to_its_run_and_forget_drops_it():
    jobs = FairJobs()
    assert jobs.timed(7, lambda a, b: a + b, 2, 3) == 5
    assert jobs.attained[7] >= 0.0
    jobs.forget(7)
    assert 7 not in jobs.attained


def test_an_executor_on_the_fair_queue_runs_jobs_and_shuts_down():
    jobs = FairJobs()
    executor = ThreadPoolExecutor(max_workers=2)
    executor._work_queue = jobs  # type: ignore[assignment]
    names = []

    async def main():
        loop = asyncio.get_running_loop()
        RUN.set(5)
        first = await loop.run_in_executor(executor, jobs.timed, 5, lambda: threading.current_thread().name)
        names.append(first)
        # A task started with outside_runs() queues its jobs as no run's, even from inside run 5's task.
        seen = await asyncio.create_task(_run_of_task(), context=outside_runs())
        return seen

    async def _run_of_task():
        return RUN.get()

    assert asyncio.run(main()) is None
    assert 5 in jobs.attained and names and names[0] != threading.current_thread().name
    executor.shutdown(wait=True)  # the threads take the shutdown's None off the queue and exit
    assert all(not t.is_alive() for t in executor._threads)
