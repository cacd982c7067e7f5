"""The run's life cycle: the transition table, the one function that moves a run, and nobody else
writing ``Run.status``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from chatapp.models import AuditEvent, Conversation, Run, RunEvent
from chatapp.services import run_lifecycle
from chatapp.services.run_lifecycle import ALLOWED, IllegalTransition, move

ROOT = Path(__file__).resolve().parents[2]
S = Run.Status
EXPECTED = {
    (S.QUEUED, S.RUNNING),
    (S.QUEUED, S.CANCELLED),
    (S.QUEUED, S.FAILED),
    (S.RUNNING, S.RUNNING),
    (S.RUNNING, S.AWAITING_APPROVAL),
    (S.RUNNING, S.AWAITING_SIGN_IN),
    (S.RUNNING, S.SUCCEEDED),
    (S.RUNNING, S.DENIED),
    (S.RUNNING, S.FAILED),
    (S.RUNNING, S.CANCELLED),
    (S.AWAITING_APPROVAL, S.QUEUED),
    (S.AWAITING_APPROVAL, S.CANCELLED),
    (S.AWAITING_APPROVAL, S.FAILED),
    (S.AWAITING_SIGN_IN, S.QUEUED),
    (S.AWAITING_SIGN_IN, S.CANCELLED),
    (S.AWAITING_SIGN_IN, S.FAILED),
}


def test_the_table_allows_exactly_the_documented_moves():
    assert set(ALLOWED) == set(S.values)
    assert {(a, b) for a, targets in ALLOWED.items() for b in targets} == EXPECTED


@pytest.fixture
def queued(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    return Run.objects.create(conversation=convo, provider_name="demo", model="m")


@pytest.mark.parametrize(("path", "illegal"), [((), S.SUCCEEDED), ((S.RUNNING, S.SUCCEEDED), S.RUNNING)])
def test_an_illegal_move_raises_and_changes_nothing(
    queued, django_capture_on_commit_callbacks, path, illegal
):
    with django_capture_on_commit_callbacks(execute=False):
        for status in path:
            move(queued.pk, status)
        before = (Run.objects.get(pk=queued.pk).status, RunEvent.objects.count(), AuditEvent.objects.count())
        with pytest.raises(IllegalTransition, match=f"cannot move from {before[0]} to {illegal}"):
            move(queued.pk, illegal)
    assert (
        Run.objects.get(pk=queued.pk).status,
        RunEvent.objects.count(),
        AuditEvent.objects.count(),
    ) == before


def test_a_move_stores_an_audit_record_and_a_status_frame_published_on_commit(
    queued, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr(run_lifecycle.frames, "_publisher", lambda conversation, items: sent.append(items))
    with django_capture_on_commit_callbacks(execute=True):
        frame = move(queued.pk, S.RUNNING, lease_owner="w1")
        assert sent == []  # not before the commit
    assert sent == [[frame]]
    assert frame["type"] == "status" and frame["data"] == {"status": "running"}
    row = RunEvent.objects.get(run=queued, seq=frame["seq"])
    assert (row.type, row.payload, row.durable) == ("status", {"status": "running"}, True)
    assert Run.objects.get(pk=queued.pk).last_seq == frame["seq"]
    audit = AuditEvent.objects.get(kind="run_status", run_id=queued.pk)
    assert (audit.payload["status"], audit.payload["from"]) == ("running", "queued")


def test_a_terminal_move_stamps_the_end_and_drops_the_lease(queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        move(queued.pk, S.RUNNING, lease_owner="w1")
        move(queued.pk, S.FAILED, error="boom")
    run = Run.objects.get(pk=queued.pk)
    assert (run.status, run.error, run.lease_owner, run.lease_expires_at) == ("failed", "boom", "", None)
    assert run.finished_at is not None
    assert AuditEvent.objects.get(kind="run_finished", run_id=run.pk).payload["status"] == "failed"
    assert [e.payload["status"] for e in RunEvent.objects.filter(run=run, type="status")] == [
        "running",
        "failed",
    ]


def _status_writes(path: Path) -> list[str]:
    """Statements that set a run's status: ``Run.objects…update(status=…)``, ``….status = …`` on a
    run, or ``save(update_fields=[…"status"…])`` outside ToolCall code."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            chain = ast.unparse(node.func)
            keywords = {k.arg for k in node.keywords}
            if node.func.attr in {"update", "create", "update_or_create"} and "status" in keywords:
                if "Run.objects" in chain or "runs." in chain or "run." in chain:
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:100]}")
        if isinstance(node, ast.Assign):
            for target in node.targets:
                text = ast.unparse(target)
                base = ast.unparse(target.value).lower() if isinstance(target, ast.Attribute) else ""
                if text.endswith(".status") and ("run" in base or base == "locked"):
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_only_the_life_cycle_module_writes_run_status():
    offenders = []
    for path in sorted((ROOT / "chatapp").rglob("*.py")):
        if "migrations" in path.parts or path.name == "run_lifecycle.py":
            continue
        offenders += _status_writes(path)
    assert offenders == []


def test_the_check_finds_a_direct_write(tmp_path):
    sample = tmp_path / "bad.py"
    sample.write_text(
        "Run.objects.filter(pk=1).update(status='failed')\nrun.status = 'queued'\ncall.status = 'ok'\n"
    )
    assert len(_status_writes(sample)) == 2


def test_the_models_hold_the_engines_status_vocabulary():
    from agent.statuses import ACTIVE_RUN_STATUSES, RUN_STATUSES, TERMINAL_RUN_STATUSES, TOOL_CALL_STATUSES
    from chatapp.models import ToolCall

    assert tuple(Run.Status.values) == RUN_STATUSES
    assert tuple(ToolCall.Status.values) == TOOL_CALL_STATUSES
    assert set(run_lifecycle.ACTIVE) | set(run_lifecycle.TERMINAL) == set(RUN_STATUSES)
    assert (run_lifecycle.ACTIVE, run_lifecycle.TERMINAL) == (ACTIVE_RUN_STATUSES, TERMINAL_RUN_STATUSES)
