"""A real topology for tests: daphne and a Celery worker as separate processes on the test database."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.db import connection

from chatapp.devstack import free_port

__all__ = ["database_url", "free_port", "stack_env"]


def database_url() -> str:
    cfg = connection.settings_dict
    if cfg["ENGINE"].endswith("postgresql"):
        user = cfg.get("USER") or "postgres"
        return f"postgres://{user}@{cfg.get('HOST') or '127.0.0.1'}:{cfg.get('PORT') or 5432}/{cfg['NAME']}"
    return f"sqlite:///{cfg['NAME']}"


def stack_env(port: int, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        "DEBUG": "1",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "PORT": str(port),
        "DEMO_MODEL_URL": f"http://127.0.0.1:{port}/demo-llm/v1",
        "CLEARLOOP_DATA_DIR": str(data_dir),
        "DEMO_MODEL_TOKENS_PER_SECOND": os.environ.get("TEST_DEMO_TOKENS_PER_SECOND", "60"),
        "CLEARLOOP_RUN_SWEEP_SECONDS": "1",
        # The pytest process runs unpooled (pyproject.toml); the stack's processes pool as deployed.
        "DB_POOL_MAX_SIZE": os.environ.get("CLEARLOOP_STACK_DB_POOL_MAX_SIZE", "16"),
        # The app's settings with the tests' fast password hasher (users log in through this stack).
        "DJANGO_SETTINGS_MODULE": "tests.live_settings",
    }
    env.update(extra)
    return env
