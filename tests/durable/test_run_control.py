"""Two admins at once, a user's stop, and a run that kills every worker that takes it (R-RUN-2/3/4)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from chatapp.models import Conversation, Message, Run, RunEvent, ToolCall
from chatapp.services.approvals import AlreadyDecided, decide
from chatapp.services.runs import start_run
from tests.durable.harness import check_recovered, outbox_lines, wait_run, wait_until
from tests.integration.client import LiveClient, session_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

SEND = 'send a text message to 13800000000 saying "hi"'


def test_two_admins_approving_at_once_give_one_execution(cast, demo_tools, durable_stack):
    from django.contrib.auth import get_user_model

    eve = get_user_model().objects.create_superuser("eve", password="eve-pass")
    durable_stack.ensure_worker()
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    run = start_run(convo, SEND)
    wait_run(run.pk, ("awaiting_approval",), 60)
    call = ToolCall.objects.get(run=run, status="awaiting_approval")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def approve(user) -> None:
        barrier.wait()
        try:
            decide(call.pk, user, approve=True, reason=f"ok from {user.username}")
            outcomes.append("decided")
        except AlreadyDecided:
            outcomes.append("already decided")
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(u,)) for u in (cast["ada"], eve)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["already decided", "decided"]
    run = wait_run(run.pk)
    check_recovered(run.pk, demo_tools.outbox)
    assert len(outbox_lines(demo_tools.outbox)) == 1
    assert ToolCall.objects.get(run=run).status == "succeeded"
    assert RunEvent.objects.filter(run=run, type="approval_decided").count() == 1


def test_user_stop_cancels_the_stream_and_keeps_the_partial_text(cast, demo_tools, durable_stack):
    durable_stack.ensure_worker()
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    client = LiveClient(durable_stack.base_url, session_for(cast["alice"]))
    # 4 tokens/s: the full answer would take about 25 s.
    run = start_run(convo, "[[demo:slow]] Tell me everything about stopping a run " + "please " * 20)

    def streamed() -> str:
        return "".join(e.payload["text"] for e in RunEvent.objects.filter(run=run, type="delta"))

    wait_until(lambda: len(streamed().split()) >= 5, 60, "five streamed words")
    token = client.csrf(f"/c/{convo.pk}/")
    asked = time.monotonic()
    response = client.http.post(
        f"/runs/{run.pk}/cancel/", headers={"X-CSRFToken": token, "Referer": durable_stack.base_url + "/"}
    )
    assert response.status_code == 204, response.text
    run = wait_run(run.pk, timeout=20)
    stopped_in = time.monotonic() - asked
    assert run.status == "cancelled", (run.status, run.error)
    kept = Message.objects.get(run=run, role="assistant")
    assert kept.partial and kept.content.strip() and kept.content in streamed() + " "
    assert "please please" not in kept.content[-30:] or len(kept.content) < 400
    # Stopped within a few cancel checks (every 32 stream events / 0.25 s), not at the end of the answer.
    assert stopped_in < 5, stopped_in
    count = RunEvent.objects.filter(run=run, type="delta").count()
    time.sleep(1)  # the upstream stream is closed: nothing is written for this run any more
    assert RunEvent.objects.filter(run=run, type="delta").count() == count


def test_a_run_that_kills_every_worker_ends_failed_as_poison(cast, demo_tools, durable_stack):
    poison = {"CLEARLOOP_CRASH_AT": "delta:2", "CLEARLOOP_RUN_MAX_DELIVERIES": "2"}
    durable_stack.ensure_worker(**poison)
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    run = start_run(convo, "Tell me about poison runs")
    for _ in range(2):  # CLEARLOOP_RUN_MAX_DELIVERIES=2 deliveries, each killing its worker
        killed = durable_stack.wait_worker_died()
        durable_stack.restart_after_kill(killed, **poison)
    run = wait_run(run.pk, timeout=60)
    assert run.status == "failed" and run.error_class == "PoisonRun", (run.status, run.error_class)
    assert run.deliveries == 2 and "never finished" in run.error, (run.deliveries, run.error)
    assert durable_stack.worker.poll() is None  # the third worker refused the run and lives on
    assert not Run.objects.filter(pk=run.pk).exclude(lease_owner="").exists()
