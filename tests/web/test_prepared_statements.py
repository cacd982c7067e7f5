"""The statements written out on the hot paths bind server-side and are prepared on a connection's
first use (chatapp/bound_cursor.py, ``DB_PREPARED_STATEMENTS``): PostgreSQL parses and plans each
once per connection instead of at every step of every run (docs/performance.md, session 18)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatapp.services.quotas import any_enabled

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.django_db


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_a_hot_statement_is_prepared_on_first_use_and_logged_as_written():
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    with CaptureQueriesContext(connection) as queries:
        assert any_enabled() is False
        assert any_enabled() is False  # the second run uses the prepared statement
    assert [s for s in _prepared() if "chatapp_quota" in s and "enabled" in s]
    # Django's query log (DEBUG, the tests' counters) shows a prepared statement as it shows any other.
    logged = [q["sql"] for q in queries.captured_queries]
    assert len(logged) == 2
    assert all(sql.startswith("SELECT 1 FROM chatapp_quota WHERE enabled = $1") for sql in logged), logged


@pytest.mark.parametrize(("configured", "expected"), [(None, 0), ("1", 0), ("0", None)])
def test_the_setting_turns_preparing_off_for_a_pooler(configured, expected):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "chatapp.settings", "DEBUG": "1"}
    env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/unused"
    env.pop("DB_PREPARED_STATEMENTS", None)
    if configured is not None:
        env["DB_PREPARED_STATEMENTS"] = configured
    code = (
        "import json; from django.conf import settings; "
        "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {}).get('prepare_threshold')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == expected


@pytest.mark.parametrize("conversation_id", [0, 2**63, 10**20])
def test_an_id_past_the_column_s_range_is_a_404_on_the_prepared_reads(cast, conversation_id):
    """Bound by the server, an id is sent with its own type (numeric past bigint): still no such row."""
    from django.test import Client

    client = Client()
    client.force_login(cast["alice"])
    assert client.post(f"/c/{conversation_id}/send/", {"message": "hi"}).status_code == 404
    assert client.get(f"/c/{conversation_id}/").status_code == 404
