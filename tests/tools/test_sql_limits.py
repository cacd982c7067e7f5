"""M3 and L11 (issue 16): result size is capped while fetching; no function reveals the process."""

import psycopg
import pytest
from tools_helpers import ADMIN_DSN

from agent.toolbox import ToolContext
from agent.tools import PostgresBackend, SqliteBackend, SqlToolbox, create_demo_sqlite, ensure_demo_database
from agent.tools.sql import MAX_RESULT_BYTES, MAX_VALUE_BYTES

TEST_DB = "clearloop_sql_limits_test"
CTX = ToolContext("r")


@pytest.fixture(scope="module")
def sqlite_box(tmp_path_factory):
    path = tmp_path_factory.mktemp("sql") / "demo.sqlite3"
    create_demo_sqlite(path)
    return SqlToolbox(SqliteBackend(path))


@pytest.fixture(scope="module")
def pg_box():
    try:
        with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=3) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEST_DB,)).fetchone():
                conn.execute(f'CREATE DATABASE "{TEST_DB}"')
    except psycopg.errors.DuplicateDatabase:
        pass
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {ADMIN_DSN}: {exc}")
    return SqlToolbox(PostgresBackend(ensure_demo_database(psycopg.conninfo.make_conninfo(ADMIN_DSN, dbname=TEST_DB))))


async def query(box, sql, limit=1):
    return await box.execute("query_database", {"sql": sql, "limit": limit}, CTX)


async def test_sqlite_huge_value_is_refused_before_it_is_built(sqlite_box):
    # The reproduction took the worker from 0.4 to 2.6 GB.
    out = await query(sqlite_box, "SELECT hex(randomblob(400000000)) AS h")
    assert not out.ok and "too big" in out.error and str(MAX_VALUE_BYTES) in out.error


async def test_sqlite_result_is_truncated_at_a_byte_cap_with_a_note(sqlite_box):
    sql = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 1000) SELECT i, hex(zeroblob(500)) FROM n"
    out = await query(sqlite_box, sql, limit=1000)
    assert out.ok and out.content["truncated"] is True
    assert f"truncated at {MAX_RESULT_BYTES} bytes" in out.content["note"]
    assert 0 < out.content["count"] < 1000


async def test_sqlite_fts3_tokenizer_pointer_is_not_disclosed(sqlite_box):
    out = await query(sqlite_box, "SELECT fts3_tokenizer('simple') AS ptr")
    assert not out.ok and "not authorized" in out.error


async def test_postgres_huge_row_never_reaches_the_worker(pg_box):
    out = await query(pg_box, "SELECT repeat(md5(random()::text), 12000000) AS big;")
    assert not out.ok and f"larger than {MAX_VALUE_BYTES} bytes" in out.error


async def test_postgres_capped_wrapper_keeps_types_order_and_refusals(pg_box):
    out = await query(pg_box, "SELECT id, name FROM users ORDER BY id DESC", limit=3)
    assert out.ok and out.content["columns"] == ["id", "name"]
    ids = [r["id"] for r in out.content["rows"]]
    assert ids == sorted(ids, reverse=True) and isinstance(ids[0], int) and out.content["truncated"] is True
    assert not (await query(pg_box, "DELETE FROM users")).ok
    assert not (await query(pg_box, "SELECT 1; DELETE FROM users")).ok
