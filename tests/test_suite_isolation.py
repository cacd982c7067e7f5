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
