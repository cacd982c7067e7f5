"""A number a killed worker took but never wrote does not stall the page (chatapp/event_log.py).

Parallel tool calls commit their frames from different threads, so frame ``n + 1`` can be stored
while ``n`` is still on its way. A worker killed between the two leaves ``n`` missing for good; a page
applies frames strictly in sequence and held every later frame of the run, never showing the answer
(the chaos test's client whose text stayed empty). Here the worker is killed while a tool runs and the
lost write is made by hand (a later frame stored, an earlier number missing); the next worker takes the
run, fills the number with a ``gap`` frame, and a websocket client that follows the run the way the
page does assembles the whole answer.
"""

from __future__ import annotations

import asyncio

import pytest

from chatapp.models import Conversation, RunEvent
from chatapp.services.runs import start_run
from tests.durable.harness import check_recovered, wait_run
from tests.durable.test_chaos import Follower
from tests.integration.client import LiveClient, session_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

FILES = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"
FILES_DONE = "分析完成，结果已经写入 report.md。"


def test_a_number_lost_with_its_worker_is_filled_and_the_client_gets_the_answer(
    cast, demo_tools, durable_stack
):
    durable_stack.start_worker(CLEARLOOP_CRASH_AT="tool_call:running:1")
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    run = start_run(convo, FILES)
    killed = durable_stack.wait_worker_died()
    last = max(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    # The other read's progress committed while the frame numbered before it died with the worker.
    lost = last + 1
    RunEvent.objects.create(run=run, seq=last + 2, type="tool_progress", payload={"call_id": "x"})
    durable_stack.restart_after_kill(killed)
    run = wait_run(run.pk)
    check_recovered(run.pk, demo_tools.outbox)
    assert run.status == "succeeded" and run.final_text == FILES_DONE
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "type"))
    assert [seq for seq, _ in seqs] == list(range(1, len(seqs) + 1))  # no number missing any more
    assert dict(seqs)[lost] == "gap"

    follower = Follower(LiveClient(durable_stack.base_url, session_for(cast["alice"])), convo.pk, run.pk)
    asyncio.run(asyncio.wait_for(follower.follow(asyncio.Event()), 30))
    assert follower.ended and follower.text() == FILES_DONE
