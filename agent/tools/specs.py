"""The built-in tools as the model sees them (003 §2.3: what it does, each parameter's meaning and
format, the limits, the shape of the result). Kept apart from the code so they read as one document.
"""

from __future__ import annotations

from agent.messages import ToolSpec

READ_FILE = ToolSpec(
    name="read_file",
    description=(
        "Read a UTF-8 text file from the conversation's workspace, a window of lines at a time. "
        "Use it to look at a file before answering about it or changing it. Paths are relative to "
        "the workspace (e.g. 'config.yaml', 'notes/todo.md'); '..', '~', absolute paths outside the "
        "workspace and symbolic links are refused. Files over 10 MB cannot be read. "
        'Returns {"success": true, "path", "content", "total_lines", "offset", "lines_returned", '
        '"next_offset"}; next_offset is null when the end of the file was reached, otherwise call '
        "again with offset=next_offset to read on."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the workspace root."},
            "offset": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "First line to return, counting from 1.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2000,
                "default": 500,
                "description": "Maximum number of lines to return (1-2000).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)

SEARCH_FILES = ToolSpec(
    name="search_files",
    description=(
        "Find files in the workspace by name, or find lines inside files by content. "
        "target='files': pattern is a shell-style glob matched against the file name and the path "
        "relative to 'path' (e.g. '*.md', 'docs/*.txt'). target='content': pattern is a Python "
        "regular expression searched in each line of text files (binary files and files over 10 MB "
        "are skipped). Symbolic links are skipped. "
        'Returns {"success": true, "matches", "count", "truncated"}: for files each match is '
        '{"path"}; for content each match is {"path", "line", "text"} with line counted from 1.'
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Directory to search from, relative to the workspace ('.' = all of it).",
            },
            "pattern": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "Glob for target='files', regular expression for target='content'.",
            },
            "target": {
                "type": "string",
                "enum": ["files", "content"],
                "description": "'files' to match file names, 'content' to search inside files.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 500,
                "default": 50,
                "description": "Maximum number of matches to return (1-500).",
            },
        },
        "required": ["path", "pattern", "target"],
        "additionalProperties": False,
    },
)

WRITE_FILE = ToolSpec(
    name="write_file",
    description=(
        "Create or completely overwrite a text file in the workspace with the given content "
        "(UTF-8). Missing parent directories are created. At most 1 MB per call: for larger "
        "content write the first part with write_file and add the rest with append_file in "
        'several calls. Returns {"success": true, "path", "bytes_written"}.'
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the workspace root."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)

APPEND_FILE = ToolSpec(
    name="append_file",
    description=(
        "Append text to the end of a file in the workspace, creating it if it does not exist. Use "
        "it to write large content in chunks of at most 1 MB each, in order. "
        'Returns {"success": true, "path", "bytes_written", "size"} where size is the new file size.'
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the workspace root."},
            "content": {"type": "string", "description": "Text to add at the end of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)

QUERY_DATABASE = ToolSpec(
    name="query_database",
    description=(
        "Run one read-only SQL query (a single SELECT, optionally with WITH) against the demo "
        "database and return the rows. Tables: users(id, name, created_at), "
        "orders(id, user_id -> users.id, product, amount, status, created_at). "
        "Writes, several statements, PRAGMA/SET and file or program access are refused by the "
        "database itself. Queries running over 5 seconds are stopped. "
        'Returns {"success": true, "columns", "rows", "count", "truncated"}: rows is a list of '
        "objects keyed by column name, at most 'limit' of them; truncated is true when more rows "
        "existed (add ORDER BY and LIMIT to choose which)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "sql": {"type": "string", "description": "One SELECT statement; no trailing second statement."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 100,
                "description": "Maximum number of rows to return (1-1000).",
            },
        },
        "required": ["sql"],
        "additionalProperties": False,
    },
)
