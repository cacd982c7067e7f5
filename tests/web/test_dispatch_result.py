"""A send hands its run to Celery by name (services/dispatch.py). The task stores no result, and a
send must not subscribe to the task's result channel: Celery did, on every send, when not told
(a Redis SUBSCRIBE, and an UNSUBSCRIBE when the unused AsyncResult was collected)."""

from __future__ import annotations

import pytest

from chatapp.celery import EXECUTE_RUN, app
from chatapp.services.dispatch import Dispatch


@pytest.fixture
def broker_messages(monkeypatch):
    """The messages a send publishes, as the broker would receive them; none is queued for real."""
    sent: list[tuple[str, dict]] = []

    def capture(producer, name, message, **options):
        sent.append((name, options))

    monkeypatch.setattr(app.amqp, "send_task_message", capture)
    return sent


def test_a_send_publishes_the_run_without_waiting_for_a_result(broker_messages, monkeypatch):
    listened: list[str] = []
    monkeypatch.setattr(app.backend, "on_task_call", lambda producer, task_id: listened.append(task_id))
    dispatch = Dispatch(41)
    dispatch.send()
    assert dispatch.sent is True and dispatch.notice == ""
    assert [name for name, _ in broker_messages] == [EXECUTE_RUN]
    assert listened == []  # no subscription to celery-task-meta-<id>
