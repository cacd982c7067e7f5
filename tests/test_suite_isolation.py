"""make test runs the suite in several pytest-xdist processes; each gets a Redis database of its own."""

from __future__ import annotations

import pytest

from tests.xdist_env import worker_redis_url


def test_each_process_takes_the_database_below_the_one_before():
    assert worker_redis_url("redis://127.0.0.1:6379/14", "gw0") == "redis://127.0.0.1:6379/14"
    assert worker_redis_url("redis://127.0.0.1:6379/14", "gw2") == "redis://127.0.0.1:6379/12"
    assert worker_redis_url("redis://:secret@db:6380", "gw0") == "redis://:secret@db:6380/0"


def test_too_few_databases_below_is_a_clear_error_not_a_shared_one():
    with pytest.raises(RuntimeError, match="no Redis database for xdist worker gw2"):
        worker_redis_url("redis://127.0.0.1:6379/1", "gw2")


class _Item:
    def __init__(self, nodeid: str, *fixtures: str) -> None:
        from tests.conftest import TESTS

        self.nodeid = nodeid
        self.fspath = TESTS.parent / nodeid.split("::")[0]
        self.fixturenames = list(fixtures)
        self.markers: list = []

    def add_marker(self, marker) -> None:
        self.markers.append(marker)


def test_files_that_start_the_live_stack_run_after_every_file_that_does_not():
    """The live stack's worker sweeps the process's test database: a unit test run after it had its
    backdated queued run adopted and driven by it (the flush then deadlocked on its audit writes)."""
    from tests.conftest import pytest_collection_modifyitems

    items = [
        _Item("tests/integration/test_b.py::test_plain"),
        _Item("tests/integration/test_b.py::test_live", "live_stack"),
        _Item("tests/browser/test_d.py::test_page", "live_stack"),
        _Item("tests/worker/test_sweep.py::test_backdated"),
        _Item("tests/admin/test_e.py::test_live", "demo_provider", "live_stack"),
        _Item("tests/web/test_f.py::test_view"),
    ]
    pytest_collection_modifyitems(items)
    assert [item.nodeid for item in items] == [
        "tests/worker/test_sweep.py::test_backdated",
        "tests/web/test_f.py::test_view",
        "tests/integration/test_b.py::test_plain",  # its file starts the stack: the file stays together
        "tests/integration/test_b.py::test_live",
        "tests/admin/test_e.py::test_live",
        "tests/browser/test_d.py::test_page",
    ]
    groups = {
        item.nodeid: [m.kwargs.get("name") or m.args[0] for m in item.markers if m.name == "xdist_group"]
        for item in items
    }
    assert (
        groups["tests/integration/test_b.py::test_plain"] == groups["tests/integration/test_b.py::test_live"]
    )
