"""Demo MCP servers, tool policies and workspace files (filled in with the tools issue)."""

from __future__ import annotations

from typing import Any


def seed_demo_tools(demo_user: Any) -> None:
    return None
