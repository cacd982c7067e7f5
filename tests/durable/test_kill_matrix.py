"""R-RUN-2: a worker SIGKILLed at each point of a run; a new worker process finishes it correctly.

The worker kills itself right after a chosen frame was stored (``CLEARLOOP_CRASH_AT``), or the test
kills it from outside at a point it can see (the outbox line, the ``awaiting_approval`` status). A
clean worker is started after Redis's visibility timeout, Redis hands the unacked task back, the
lease of the dead worker expires, and the run continues from its rows. ``check_recovered`` holds the
invariants every case must meet; each case adds what is specific to its point.
"""

from __future__ import annotations

import pytest

from chatapp.models import Conversation, Message, Run, RunEvent, ToolCall
from chatapp.services.approvals import decide
from chatapp.services.runs import start_run
from tests.durable.harness import check_recovered, outbox_lines, wait_run, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

FILES = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"
FILES_DONE = "分析完成，结果已经写入 report.md。"
SEND = 'send a text message to 13800000000 saying "hi"'
LONG = "Tell me a long story about durable runs, " + "crash after crash, " * 8


def begin(cast, demo_tools, text):
    convo = Conversation.objects.create(owner=cast["alice"], provider=demo_tools.provider)
    return start_run(convo, text)


def approve_send(cast, run):
    wait_run(run.pk, ("awaiting_approval",), 60)
    call = ToolCall.objects.get(run=run, status="awaiting_approval")
    decide(call.pk, cast["ada"], approve=True, reason="ok")
    return call


def test_kill_mid_stream_requests_the_unfinished_round_again(cast, demo_tools, durable_stack):
    durable_stack.start_worker(CLEARLOOP_CRASH_AT="delta:5")
    run = begin(cast, demo_tools, LONG)
    killed = durable_stack.wait_worker_died()
    partial = "".join(
        e.payload["text"] for e in RunEvent.objects.filter(run=run, type="delta").order_by("seq")
    )
    durable_stack.restart_after_kill(killed)
    run = wait_run(run.pk)
    figures = check_recovered(run.pk, demo_tools.outbox)
    assert run.status == "succeeded" and run.deliveries == 2
    assert figures["round_requests"] == 2 and figures["rounds"] == 1  # the cut round, asked again
    assert partial and run.final_text.startswith(partial.strip()[:20])
    assert "crash after crash" in run.final_text
    assert Message.objects.get(run=run, role="assistant").content == run.final_text


def test_kill_after_the_response_is_stored_runs_the_tools_without_asking_again(
    cast, demo_tools, durable_stack
):
    durable_stack.start_worker(CLEARLOOP_CRASH_AT="round_finished:1")
    run = begin(cast, demo_tools, FILES)
    killed = durable_stack.wait_worker_died()
    assert ToolCall.objects.filter(run=run).count() == 0  # nothing ran before the kill
    durable_stack.restart_after_kill(killed)
    run = wait_run(run.pk)
    figures = check_recovered(run.pk, demo_tools.outbox)
    assert run.status == "succeeded" and run.final_text == FILES_DONE and run.deliveries == 2
    assert figures["rounds"] == figures["round_requests"] == 3
    assert set(figures["attempts"].values()) == {1}
    report = next(demo_tools.workspaces.glob("conversation-*/report.md")).read_text()
    assert "Markdown" in report and "agents" in report


def test_kill_while_a_read_only_tool_runs_runs_it_again(cast, demo_tools, durable_stack):
    durable_stack.start_worker(CLEARLOOP_CRASH_AT="tool_call:running:1")
    run = begin(cast, demo_tools, FILES)
    killed = durable_stack.wait_worker_died()
    interrupted = ToolCall.objects.get(run=run, status="running")
    assert interrupted.name in ("read_file", "search_files")
    durable_stack.restart_after_kill(killed)
    run = wait_run(run.pk)
    figures = check_recovered(run.pk, demo_tools.outbox)
    assert run.status == "succeeded" and run.final_text == FILES_DONE and run.deliveries == 2
    assert figures["rounds"] == figures["round_requests"] == 3
    interrupted.refresh_from_db()
    assert interrupted.status == "succeeded" and interrupted.attempts == 2  # read-only: run again


def test_kill_after_tool_results_are_stored_goes_on_with_the_next_round(cast, demo_tools, durable_stack):
    durable_stack.start_worker(CLEARLOOP_CRASH_AT="tool_call:succeeded:2")
    run = begin(cast, demo_tools, FILES)
    killed = durable_stack.wait_worker_died()
    assert ToolCall.objects.filter(run=run, status="succeeded").count() == 2
    durable_stack.restart_after_kill(killed)
    run = wait_run(run.pk)
    figures = check_recovered(run.pk, demo_tools.outbox)
    assert run.status == "succeeded" and run.final_text == FILES_DONE and run.deliveries == 2
    assert figures["rounds"] == figures["round_requests"] == 3
    assert set(figures["attempts"].values()) == {1}  # no tool ran twice


def test_side_effect_killed_before_it_ran_is_unknown_and_never_repeated(cast, demo_tools, durable_stack):
    durable_stack.start_worker(CLEARLOOP_CRASH_AT="tool_call:running:1")
    run = begin(cast, demo_tools, SEND)
    approve_send(cast, run)
    killed = durable_stack.wait_worker_died()
    durable_stack.restart_after_kill(killed)
    run = wait_run(run.pk)
    figures = check_recovered(run.pk, demo_tools.outbox, sent_before_kill=0)
    call = ToolCall.objects.get(run=run)
    assert call.status == "unknown" and call.error_code == "outcome_unknown" and call.attempts == 1
    assert figures["outbox"] == 0
    assert run.status == "succeeded" and "not sent" in run.final_text
    assert run.deliveries == 2  # the approval pause reset the count; resume + redelivery


def test_side_effect_killed_after_it_ran_is_unknown_and_sent_exactly_once(cast, demo_tools, durable_stack):
    demo_tools.hold_after_send()  # the MCP server answers only once the hold file exists
    durable_stack.ensure_worker()
    run = begin(cast, demo_tools, SEND)
    approve_send(cast, run)
    wait_until(lambda: len(outbox_lines(demo_tools.outbox)) == 1, 60, "the outbox line")
    killed = durable_stack.kill_worker()
    demo_tools.hold.touch()  # let the orphaned MCP server finish and exit
    durable_stack.restart_after_kill(killed)
    run = wait_run(run.pk)
    figures = check_recovered(run.pk, demo_tools.outbox, sent_before_kill=1)
    call = ToolCall.objects.get(run=run)
    assert call.status == "unknown" and call.attempts == 1
    assert figures["outbox"] == 1
    assert run.status == "succeeded" and run.deliveries == 2


def test_kill_while_awaiting_approval_then_approve_sends_exactly_once(cast, demo_tools, durable_stack):
    durable_stack.ensure_worker()
    run = begin(cast, demo_tools, SEND)
    wait_run(run.pk, ("awaiting_approval",), 60)
    wait_until(lambda: not Run.objects.get(pk=run.pk).lease_owner, 10, "the segment's end")
    durable_stack.kill_worker()  # nothing holds the run while it waits (R-RUN-3)
    approve_send(cast, run)
    durable_stack.ensure_worker()
    run = wait_run(run.pk)
    figures = check_recovered(run.pk, demo_tools.outbox)
    assert ToolCall.objects.get(run=run).status == "succeeded"
    assert figures["outbox"] == 1
    assert run.status == "succeeded" and run.final_text == "The message was sent."
    assert run.deliveries >= 1  # reset to 0 by the clean pause; the resume delivered it again
