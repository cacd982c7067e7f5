"""query_database: read-only SQL, enforced by the database, never only by parsing (R-TOOL-1, 000 §10.2).

Each backend makes writes impossible where the data lives:

* ``SqliteBackend`` opens the file with ``mode=ro`` (the OS-level handle cannot write), turns on
  ``query_only`` and installs an authorizer that allows only SELECT, column reads and function calls
  (PRAGMA, ATTACH, DML, DDL, transactions ... are all denied before they run). ``sqlite3`` itself
  runs one statement per ``execute``.
* ``PostgresBackend`` (``sql_postgres``) connects as a role that was only granted SELECT, in a
  read-only transaction with a statement timeout, and prepares the statement so that a second
  statement cannot ride along.

Nothing here tries to recognise "bad SQL": a parser can be fooled, a missing privilege cannot.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from agent.toolbox import ToolContext, ToolInfo, ToolOutcome
from agent.tools import specs
from agent.tools.threads import Budget, run_abandonable

MAX_SQL_CHARS = 20_000
MAX_LIMIT = 1000
# Size caps enforced while fetching (issue 16, M3): one value, and the whole result as JSON.
MAX_VALUE_BYTES = 1024 * 1024
MAX_RESULT_BYTES = 256 * 1024
# Functions no answer needs and that reveal the process (fts3_tokenizer returns a native pointer, L11)
# or touch files (the CLI's readfile/writefile/edit, should an extension provide them).
DENIED_SQLITE_FUNCTIONS = frozenset({"fts3_tokenizer", "load_extension", "readfile", "writefile", "edit"})


class QueryRefused(Exception):
    """The database refused the statement (a write, a second statement, a forbidden function ...)."""


class QueryTimeout(Exception):
    """The statement ran past the backend's timeout and was stopped."""


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool
    note: str | None = None


class SqlBackend(Protocol):
    async def query(self, sql: str, limit: int) -> QueryResult:
        """Run one read-only statement; return at most ``limit`` rows (``truncated`` if more existed)."""
        ...


def json_value(value: Any) -> Any:
    """Turn a database value into something JSON can carry without losing meaning."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return {"base64": base64.b64encode(raw[:1024]).decode(), "bytes": len(raw)}
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


def rows_to_result(
    columns: list[str], raw_rows: list[tuple[Any, ...]], limit: int, *, max_bytes: int = MAX_RESULT_BYTES
) -> QueryResult:
    """Rows as JSON values: at most ``limit`` rows and ``max_bytes`` of JSON, saying where it was cut."""
    rows: list[dict[str, Any]] = []
    size = 0
    for row in raw_rows[:limit]:
        item = {c: json_value(v) for c, v in zip(columns, row, strict=False)}
        size += len(json.dumps(item, ensure_ascii=False, default=str).encode())
        if size > max_bytes:
            note = f"truncated at {max_bytes} bytes: {len(rows)} rows fit; select fewer columns or rows"
            return QueryResult(columns=columns, rows=rows, truncated=True, note=note)
        rows.append(item)
    return QueryResult(columns=columns, rows=rows, truncated=len(raw_rows) > limit)


class SqlToolbox:
    """The ``query_database`` tool over one backend."""

    def __init__(self, backend: SqlBackend, *, description: str | None = None) -> None:
        self.backend = backend
        self._spec = specs.QUERY_DATABASE
        if description:
            self._spec = type(self._spec)(self._spec.name, description, self._spec.parameters)

    async def list_tools(self) -> list[ToolInfo]:
        return [ToolInfo(spec=self._spec, risk="read_only", idempotent=True)]

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if name != "query_database":
            return ToolOutcome.failure("unknown_tool", f"no SQL tool named {name!r}")
        sql = arguments.get("sql")
        limit = arguments.get("limit", 100)
        if not isinstance(sql, str) or not sql.strip():
            return ToolOutcome.failure("invalid_arguments", "sql must be a non-empty string")
        if len(sql) > MAX_SQL_CHARS or "\x00" in sql:
            return ToolOutcome.failure(
                "invalid_arguments", f"sql must be under {MAX_SQL_CHARS} characters, no NUL"
            )
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            return ToolOutcome.failure(
                "invalid_arguments", f"limit must be an integer between 1 and {MAX_LIMIT}"
            )
        try:
            result = await self.backend.query(sql, limit)
        except QueryTimeout as exc:
            return ToolOutcome.failure("timeout", str(exc))
        except QueryRefused as exc:
            return ToolOutcome.failure("execution_error", str(exc))
        body = {
            "success": True,
            "columns": result.columns,
            "rows": result.rows,
            "count": len(result.rows),
            "truncated": result.truncated,
        }
        if result.note:
            body["note"] = result.note
        return ToolOutcome.success(body, truncated=result.truncated)


# --- SQLite ---------------------------------------------------------------------------------------

_ALLOWED_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_FUNCTION,
        getattr(sqlite3, "SQLITE_RECURSIVE", 33),
    }
)


def _authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_SQLITE_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


class SqliteBackend:
    """A SQLite file opened read-only, one fresh connection per query (in a worker thread)."""

    def __init__(self, path: Path, *, timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.timeout = timeout

    async def query(self, sql: str, limit: int) -> QueryResult:
        # An abandonable tool thread: Stop and the tool timeout end the await at once, and the
        # progress handler below interrupts the statement as soon as the budget says so.
        return await run_abandonable(self._query, sql, limit, budget=Budget.of(self.timeout))

    def _connect(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise QueryRefused("the demo database is not available")
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only = ON")
        # No string or blob over the cap can even be built (randomblob(4e8) fails instead of using GBs).
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.set_authorizer(_authorizer)  # installed last: from here on even PRAGMA is denied
        return conn

    def _query(self, sql: str, limit: int, budget: Budget) -> QueryResult:
        conn = self._connect()
        # The progress handler is SQLite's only way to interrupt a running statement.
        conn.set_progress_handler(lambda: int(budget.expired()), 10_000)
        try:
            cur = conn.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            raw = cur.fetchmany(limit + 1)
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise QueryTimeout(f"query stopped after {self.timeout:g} s") from None
            raise QueryRefused(f"query refused: {exc}") from None
        except sqlite3.DataError as exc:
            cap = f"values are limited to {MAX_VALUE_BYTES} bytes"
            raise QueryRefused(f"query refused: {exc} ({cap})") from None
        except (sqlite3.DatabaseError, sqlite3.ProgrammingError, sqlite3.Warning) as exc:
            raise QueryRefused(f"query refused: {exc}") from None
        finally:
            conn.close()
        return rows_to_result(columns, raw, limit)
