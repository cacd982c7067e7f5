"""The demo database behind query_database: PostgreSQL (own schema, SELECT-only role) or SQLite."""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.db import connection

from agent.tools import PostgresBackend, SqliteBackend, create_demo_sqlite, ensure_demo_database


def admin_dsn() -> str:
    cfg = connection.settings_dict
    parts = [
        f"dbname={cfg['NAME']}",
        f"host={cfg.get('HOST') or '127.0.0.1'}",
        f"port={cfg.get('PORT') or 5432}",
        f"user={cfg.get('USER') or 'postgres'}",
    ]
    if cfg.get("PASSWORD"):
        parts.append(f"password={cfg['PASSWORD']}")
    return " ".join(parts)


def sqlite_path() -> Path:
    return Path(settings.DATA_DIR) / "demo.sqlite3"


_setup_lock = threading.Lock()


@lru_cache(maxsize=1)
def _cached_reader_dsn() -> str:
    return ensure_demo_database(admin_dsn())


def _postgres_reader_dsn() -> str:
    # Several runs start at once on a fresh database: set the demo schema up once, not in parallel.
    with _setup_lock:
        return _cached_reader_dsn()


def ensure() -> None:
    if settings.USES_POSTGRES:
        _postgres_reader_dsn()
    elif not sqlite_path().exists():
        create_demo_sqlite(sqlite_path())


def sql_backend() -> PostgresBackend | SqliteBackend:
    ensure()
    if settings.USES_POSTGRES:
        return PostgresBackend(_postgres_reader_dsn())
    return SqliteBackend(sqlite_path())
