"""Demo mode with nothing configured (SQLite and a Redis the app starts itself): the environment and
`manage.py` runner of the tests that start it for real (fixtures in tests/integration/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.integration.stack import free_port

ROOT = Path(__file__).resolve().parents[2]


def embedded_env(tmp_path: Path) -> dict[str, str]:
    port, redis_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        {
            "DEBUG": "1",
            "CLEARLOOP_DATA_DIR": str(tmp_path / "data"),
            "PORT": str(port),
            "CLEARLOOP_EMBEDDED_REDIS_PORT": str(redis_port),
            # Slow enough that the answer spans several frames even when a loaded machine widens the
            # worker's coalescing window (4 x its loop lag): at 200 tokens/s a busy machine sent 2.
            "DEMO_MODEL_TOKENS_PER_SECOND": "50",
            "CLEARLOOP_QUEUE": f"embedded-{port}",
        }
    )
    return env


def manage(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
