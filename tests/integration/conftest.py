"""Shared fixtures (live_stack, demo_provider) live in tests/conftest.py; here, the embedded demo's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.embedded import embedded_env, manage


@pytest.fixture(scope="session")
def seeded_data(tmp_path_factory) -> Path:
    """A data directory migrated and seeded once per test process (12 s each time on this machine)."""
    env = embedded_env(tmp_path_factory.mktemp("embedded-template"))
    for args in (("migrate", "--noinput"), ("seed_demo",)):
        result = manage(env, *args)
        assert result.returncode == 0, result.stderr
    data = Path(env["CLEARLOOP_DATA_DIR"])
    # The commands have exited, so SQLite has folded its write-ahead log into the files: a plain copy
    # of the directory is a consistent database.
    assert not list(data.glob("*-wal")), list(data.iterdir())
    return data


@pytest.fixture
def seeded(tmp_path, seeded_data) -> dict[str, str]:
    """The embedded demo's environment on a migrated, seeded copy of its own (ports of its own)."""
    env = embedded_env(tmp_path)
    shutil.copytree(seeded_data, env["CLEARLOOP_DATA_DIR"])
    return env
