"""An admin's per-tool limit (ToolPolicy.max_calls_per_run) and "disabled" reach the model as denials."""

from __future__ import annotations

import time

import pytest

from chatapp.models import Conversation, Run, ToolCall, ToolPolicy
from chatapp.services.runs import start_run

pytestmark = pytest.mark.django_db(transaction=True)
FILES = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"


def finished(run: Run, timeout: float = 120) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in ("succeeded", "failed", "cancelled", "denied", "awaiting_approval"):
            return run
        time.sleep(0.1)  # polling the database for a state reached by another process
    raise AssertionError(f"run stayed {run.status}")


def test_a_tool_the_admin_disabled_is_not_offered(cast, demo_tools, live_stack):
    ToolPolicy.objects.filter(pattern="search_files").update(enabled=False)
    run = finished(start_run(Conversation.objects.create(owner=cast["alice"]), FILES))
    offered = [t["name"] for t in run.rounds.get(index=0).request["tools"]]
    assert "read_file" in offered and "search_files" not in offered


def test_a_tool_over_its_admin_limit_is_denied_to_the_model(cast, demo_tools, live_stack):
    ToolPolicy.objects.filter(pattern="read_file").update(max_calls_per_run=1)
    # The demo model's loop switch calls the first offered tool (read_file) round after round.
    run = finished(start_run(Conversation.objects.create(owner=cast["alice"]), "[[demo:loop]] read on"))
    calls = list(ToolCall.objects.filter(run=run, name="read_file").order_by("round_index"))
    assert calls[0].status in ("succeeded", "failed")
    denied = [c for c in calls if c.status == "denied"]
    assert denied and "at most 1 times per run" in denied[0].result
    assert len([c for c in calls if c.status in ("succeeded", "failed")]) == 1
    assert run.status == "denied"  # a refused call never ends the run "succeeded" (issue 12 item 2)
