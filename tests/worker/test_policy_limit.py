"""An admin's per-run limit (``ToolPolicy.max_calls_per_run``) is decided from the proposal's count,
without a query (the end-to-end check with a live worker is tests/integration/test_policy_limits.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from agent.loop import ProposedCall
from chatapp.services.policies import Rule
from chatapp.worker.toolboxes import DbPolicy
from tests.loop.loop_doubles import info

pytestmark = pytest.mark.django_db


def proposal(executed_before: int) -> ProposedCall:
    return ProposedCall("run", "c", "read_file", {}, info("read_file"), executed_before=executed_before)


@pytest.mark.parametrize(
    ("limit", "executed", "action"),
    [(1, 0, "allow"), (1, 1, "deny"), (3, 2, "allow"), (3, 5, "deny"), (0, 99, "allow")],
)
def test_the_limit_counts_the_calls_started_before(limit, executed, action, django_assert_num_queries):
    box = SimpleNamespace(
        effective={"read_file": Rule(tier="read_only", approval="never", max_calls_per_run=limit)}
    )
    with django_assert_num_queries(0):
        decision = asyncio.run(DbPolicy(box).check(proposal(executed)))  # type: ignore[arg-type]
    assert decision.action == action
    if action == "deny":
        assert decision.reason == f"read_file may run at most {limit} times per run (admin policy)"
