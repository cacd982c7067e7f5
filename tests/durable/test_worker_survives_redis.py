"""Issue 16 item 7 (review I2): a Redis restart does not take the production worker down; it
reconnects and answers the next message (compose's `restart:` and `make run`'s supervisor remain for
a worker that dies of anything else)."""

from __future__ import annotations

import pytest

from chatapp.models import Conversation
from chatapp.services.runs import start_run
from tests.durable.harness import wait_run, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


def test_the_worker_reconnects_after_a_redis_restart_and_answers(cast, demo_tools, durable_stack):
    worker = durable_stack.ensure_worker()
    durable_stack.kill_redis()
    durable_stack.start_redis()  # empty: no persistence, every queue and group is gone
    wait_until(durable_stack.worker_answers, 60, "the worker answering on the new Redis", step=0.2)
    assert worker.poll() is None, f"the worker exited with {worker.returncode}"
    assert durable_stack.worker is worker
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    run = wait_run(start_run(convo, "after the restart").pk, timeout=60)
    assert run.status == "succeeded" and "after the restart" in run.final_text
    assert worker.poll() is None
