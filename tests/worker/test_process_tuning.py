"""daphne and the worker hand the GIL back to their asyncio loop within ``GIL_SWITCH_MS``
(chatapp/gil.py): measured, CPython's 5 ms default let a burst of run starts on the DB threads hold
every stream's tokens back. And they freeze their start-up objects (chatapp/gc_freeze.py): each full
garbage collection had stopped the worker for 150-178 ms (docs/performance.md, session 14)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from chatapp.worker.runtime import WorkerRuntime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def restore_interval():
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)
    gc.unfreeze()  # the runtime froze this test process's objects: let them be collected again


def test_the_worker_runtime_sets_the_configured_interval(settings, restore_interval):
    settings.GIL_SWITCH_MS = 0.7
    sys.setswitchinterval(0.005)
    runtime = WorkerRuntime()
    try:
        assert sys.getswitchinterval() == pytest.approx(0.0007)
    finally:
        runtime.close()


@pytest.mark.parametrize(("configured", "expected"), [("", 0.0005), ("2", 0.002)])
def test_the_asgi_process_sets_the_configured_interval(configured, expected):
    env = {**os.environ, "CLEARLOOP_GIL_SWITCH_MS": configured, "DJANGO_SETTINGS_MODULE": "chatapp.settings"}
    code = "import sys, chatapp.asgi; print(sys.getswitchinterval())"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert float(out.stdout.strip().splitlines()[-1]) == pytest.approx(expected)


def test_a_bad_interval_is_refused_with_its_name():
    env = {**os.environ, "CLEARLOOP_GIL_SWITCH_MS": "0", "DJANGO_SETTINGS_MODULE": "chatapp.settings"}
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0 and "CLEARLOOP_GIL_SWITCH_MS" in out.stderr


def test_the_worker_runtime_freezes_what_exists_when_it_starts(settings, restore_interval):
    settings.GC_FREEZE = True
    gc.unfreeze()
    runtime = WorkerRuntime()
    try:
        assert gc.get_freeze_count() > 10_000  # Django, the app, the test's modules
    finally:
        runtime.close()


@pytest.mark.parametrize(("configured", "frozen"), [(None, True), ("0", False)])
def test_the_asgi_process_freezes_its_start_up_objects(configured, frozen):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "chatapp.settings"}
    env.pop("CLEARLOOP_GC_FREEZE", None)
    if configured is not None:
        env["CLEARLOOP_GC_FREEZE"] = configured
    code = "import gc, chatapp.asgi; print(gc.get_freeze_count())"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    count = int(out.stdout.strip().splitlines()[-1])
    assert (count > 10_000) is frozen, count


def test_the_worker_builds_its_runtime_and_tokenizer_before_the_first_run():
    """``recovery.warm_up`` (started when the worker is ready): the first run after a worker starts no
    longer pays ~430 ms of imports and set-up, and the tokenizer's build no longer runs on the loop
    every run shares (docs/performance.md, session 17)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "chatapp.settings", "CLEARLOOP_GC_FREEZE": "0"}
    code = (
        "import django; django.setup()\n"
        "from agent.context import tokens\n"
        "from chatapp.worker import recovery, runtime\n"
        "assert runtime.current_runtime() is None and tokens._offline_encoder.cache_info().currsize == 0\n"
        "recovery.warm_up()\n"
        "print(runtime.current_runtime() is not None, tokens._offline_encoder.cache_info().currsize)\n"
        "runtime.shutdown_runtime()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "True 1"
