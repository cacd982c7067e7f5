"""The app's management commands on a database that was never set up (a checkout where ``make run``
has not run yet) end with a clear error naming what to run, not a "no such table" traceback
(chatapp/management/migrated.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv",
    [["approvals", "--json"], ["verify_audit"], ["mcp_export"], ["chat", "--user", "demo", "--message", "hi"]],
)
def test_a_command_on_an_empty_database_says_to_migrate(tmp_path, argv):
    env = {**os.environ, "DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}", "REDIS_URL": ""}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1
    assert "is not set up yet" in out.stderr and "manage.py migrate" in out.stderr
    assert "Traceback" not in out.stderr
