"""Built-in tools: workspace files and read-only SQL, plus ``CombinedToolbox`` to put toolboxes together."""

from agent.tools.combined import CombinedToolbox, DuplicateToolError
from agent.tools.demo_data import create_demo_sqlite
from agent.tools.files import WorkspaceLimits, WorkspaceToolbox
from agent.tools.sql import QueryRefused, QueryResult, QueryTimeout, SqlBackend, SqliteBackend, SqlToolbox
from agent.tools.sql_postgres import DEMO_ROLE, DEMO_SCHEMA, PostgresBackend, ensure_demo_database
from agent.tools.workspace import UnsafePathError, WorkspaceError, conversation_workspace

__all__ = [
    "DEMO_ROLE",
    "DEMO_SCHEMA",
    "CombinedToolbox",
    "DuplicateToolError",
    "PostgresBackend",
    "QueryRefused",
    "QueryResult",
    "QueryTimeout",
    "SqlBackend",
    "SqlToolbox",
    "SqliteBackend",
    "UnsafePathError",
    "WorkspaceError",
    "WorkspaceLimits",
    "WorkspaceToolbox",
    "conversation_workspace",
    "create_demo_sqlite",
    "ensure_demo_database",
]
