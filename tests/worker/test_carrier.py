"""The carrier admits runs by capacity, not by threads, and hands unfinished runs back at shutdown."""

from __future__ import annotations

import asyncio
import threading

import pytest

from chatapp.worker.carrier import Closing, RunCarrier


def _admit_in_thread(
    carrier: RunCarrier, run_id: int | None = None
) -> tuple[threading.Thread, threading.Event, list[BaseException]]:
    admitted = threading.Event()
    errors: list[BaseException] = []

    def go() -> None:
        try:
            carrier.admit(run_id)
            admitted.set()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, admitted, errors


def test_a_full_carrier_makes_the_next_admission_wait_until_a_run_ends():
    carrier = RunCarrier(2)
    carrier.admit()
    carrier.admit()
    thread, admitted, errors = _admit_in_thread(carrier)
    assert not admitted.wait(0.2)  # bounded look: a third run is not admitted while two are carried
    assert carrier.carrying == 2
    carrier.release()
    assert admitted.wait(10) and not errors
    thread.join(10)
    assert carrier.carrying == 2 and carrier.peak == 2


def test_the_runs_waiting_for_a_slot_are_known_until_admitted():
    # The sweep does not take a run waiting here for a lost one (sweep.py).
    carrier = RunCarrier(1)
    carrier.admit(1)
    thread, admitted, errors = _admit_in_thread(carrier, 7)
    assert not admitted.wait(0.2)
    assert carrier.waiting == {7}
    carrier.release()
    assert admitted.wait(10) and not errors
    thread.join(10)
    assert carrier.waiting == set()


def test_closing_wakes_a_waiting_admission_with_closing():
    carrier = RunCarrier(1)
    carrier.admit()
    thread, admitted, errors = _admit_in_thread(carrier)
    assert not admitted.wait(0.1)
    carrier.close()
    thread.join(10)
    assert not admitted.is_set() and len(errors) == 1 and isinstance(errors[0], Closing)
    with pytest.raises(Closing):
        carrier.admit()  # nothing is admitted once closing, even with a slot free
    carrier.release()
    with pytest.raises(Closing):
        carrier.admit()


def test_runs_share_one_loop_and_drain_hands_back_only_the_unfinished():
    async def scenario() -> tuple[list[int], int, set[str]]:
        loop = asyncio.get_running_loop()
        carrier = RunCarrier(500)
        quick_done = asyncio.Event()
        ended: set[str] = set()

        async def quick() -> None:
            await quick_done.wait()
            ended.add("quick")

        async def endless() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                ended.add("endless cancelled")
                raise

        for run_id in range(1, 301):  # far more runs than any thread pool of this worker
            carrier.admit()
            carrier.start(loop, run_id, endless if run_id == 7 else quick)
        await asyncio.sleep(0)  # the starts are scheduled with call_soon_threadsafe
        assert len(carrier.tasks) == 300 and carrier.carrying == 300
        quick_done.set()
        carrier.close()
        left = await carrier.drain(5)
        return left, carrier.carrying, ended

    left, carrying, ended = asyncio.run(scenario())
    assert left == [7]
    assert carrying == 0  # every slot came back, the cancelled run's too
    assert ended == {"quick", "endless cancelled"}
