"""Tool policies (R-TOOL-2): which tier a tool is in, whether it needs an admin, what the model reads.

A ``ToolPolicy`` pattern is a tool name or a glob (``github__*``); an exact name beats a glob and a
longer glob beats a shorter one. Without a policy, a built-in tool keeps the tier the engine gives
it and every MCP tool is high risk, unless its server is marked trusted and annotates it
``readOnlyHint`` (annotations from untrusted servers are only shown as hints).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cache

from django.db import connection

from chatapp import row_sql
from chatapp.bound_cursor import bound_cursor
from chatapp.models import ToolPolicy


@dataclass(frozen=True, slots=True)
class Rule:
    tier: str
    approval: str  # never | always | when_high
    enabled: bool = True
    max_calls_per_run: int = 3
    description: str = ""
    allow_self_approval: bool = False
    approver: str = "admin"  # admin | user: who decides when the call needs approval

    @property
    def needs_approval(self) -> bool:
        return self.approval == "always" or (self.approval == "when_high" and self.tier == "high")


def load_rules() -> list[tuple[str, Rule]]:
    """Every policy as ``(pattern, Rule)``, in pattern order (read at every run's start)."""
    if connection.vendor != "postgresql":
        rows = list(ToolPolicy.objects.order_by("pattern").values_list(*_RULE_FIELDS))
    else:
        # Written out once: the ORM's query building was most of this read's CPU
        # (docs/performance.md, session 17; tests/worker/test_host_rows.py).
        with bound_cursor(connection) as cursor:
            cursor.execute(_rules_sql())
            rows = cursor.fetchall()
    return [(row[0], Rule(*row[1:])) for row in rows]


# The pattern, then the columns in ``Rule``'s order.
_RULE_FIELDS = (
    "pattern",
    "tier",
    "approval",
    "enabled",
    "max_calls_per_run",
    "description_override",
    "allow_self_approval",
    "approver",
)


@cache
def _rules_sql() -> str:
    quote = connection.ops.quote_name
    names = ", ".join(quote(row_sql.column(ToolPolicy, f)) for f in _RULE_FIELDS)
    return f"SELECT {names} FROM {quote(ToolPolicy._meta.db_table)} ORDER BY {quote('pattern')}"  # noqa: S608 - the model's own names


def match(rules: list[tuple[str, Rule]], name: str) -> Rule | None:
    exact = [rule for pattern, rule in rules if pattern == name]
    if exact:
        return exact[0]
    globs = [(len(pattern), rule) for pattern, rule in rules if fnmatch.fnmatchcase(name, pattern)]
    return max(globs, key=lambda item: item[0])[1] if globs else None


def default_rule(risk: str, server: str | None, trusted: bool, hints: dict) -> Rule:
    if server is None:
        return Rule(tier=risk, approval="when_high")
    if trusted and hints.get("readOnlyHint") is True:
        return Rule(tier="read_only", approval="when_high")
    return Rule(tier="high", approval="when_high")
