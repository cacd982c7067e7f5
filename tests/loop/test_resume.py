"""Resumption (R-RUN-2 through the loop): stop a run after every durable event, rebuild, continue."""

import json

import pytest
from loop_doubles import (
    FuncToolbox,
    ScriptedProvider,
    call,
    info,
    reply,
    returning,
    rounds_so_far,
    start_messages,
)

from agent.events import DURABLE, RoundFinished, ToolCallChanged
from agent.loop import LoopSettings, NextStepFinalOutput, NextStepInterruption, RiskPolicy, run_agent
from agent.loop.history import transcript
from agent.sink import ListSink
from agent.state import ApprovalDecision, RunState

MESSAGE = {"phone_number": {"type": "string"}, "content": {"type": "string"}}


def scenario_provider():
    def respond(req):
        n = rounds_so_far(req)
        if n == 0:
            return reply(
                calls=[call("r1", "read_file", {"path": "a"}), call("w1", "write_file", {"path": "b"})]
            )
        if n == 1:
            return reply(calls=[call("s1", "send_message", {"phone_number": "+1", "content": "hi"})])
        return reply("all done")

    return ScriptedProvider(respond)


def scenario_toolbox():
    return FuncToolbox(
        {
            "read_file": (info("read_file", {"path": {"type": "string"}}), returning({"text": "A"})),
            "write_file": (
                info("write_file", {"path": {"type": "string"}}, risk="low"),
                returning({"written": 1}),
            ),
            "send_message": (info("send_message", MESSAGE, risk="high"), returning({"sent": True})),
        }
    )


DECISION = ApprovalDecision("s1", approved=True, decided_by="admin")


async def reference_run():
    state = RunState.start("run", start_messages("do it"))
    sink = ListSink()
    provider, toolbox = scenario_provider(), scenario_toolbox()
    first = await run_agent(state, provider, toolbox, sink, LoopSettings(), RiskPolicy())
    assert isinstance(first, NextStepInterruption)
    state.record_decision(DECISION)
    final = await run_agent(state, provider, toolbox, sink, LoopSettings(), RiskPolicy())
    assert isinstance(final, NextStepFinalOutput)
    return state, [e for e in sink.events if isinstance(e, DURABLE)], toolbox


async def test_reference_run_executes_each_call_once():
    state, events, toolbox = await reference_run()
    assert sorted(name for name, _ in toolbox.executed) == ["read_file", "send_message", "write_file"]
    assert state.outcome.text == "all done"


def status_at(events, call_id):
    statuses = [e.status for e in events if isinstance(e, ToolCallChanged) and e.call_id == call_id]
    return statuses[-1] if statuses else None


async def test_resumes_from_every_step_without_repeating_rounds_or_finished_calls():
    ref_state, events, _ = await reference_run()
    total_rounds = len(ref_state.rounds)
    for cut in range(len(events) + 1):
        prefix = events[:cut]
        state = RunState.rebuild("run", start_messages("do it"), prefix, decisions=[DECISION])
        provider, toolbox = scenario_provider(), scenario_toolbox()
        step = await run_agent(state, provider, toolbox, ListSink(), LoopSettings(), RiskPolicy())
        assert step == NextStepFinalOutput("all done"), cut
        stored_rounds = sum(isinstance(e, RoundFinished) for e in prefix)
        assert len(provider.requests) == total_rounds - stored_rounds, cut
        ran = [name for name, _ in toolbox.executed]
        for call_id, name in [("r1", "read_file"), ("w1", "write_file"), ("s1", "send_message")]:
            before = status_at(prefix, call_id)
            expected = 0 if before in ("succeeded", "failed", "invalid", "denied", "unknown") else 1
            if before == "running" and name != "read_file":
                expected = 0  # side effect may have happened: never repeated ...
                assert status_at_state(state, call_id) == "unknown", cut  # ... and reported as unknown
            assert ran.count(name) == expected, (cut, call_id, before)


def status_at_state(state, call_id):
    return next(c.status for c in state.calls.values() if c.call_id == call_id)


async def test_resumed_history_equals_the_uninterrupted_one():
    ref_state, events, _ = await reference_run()
    expected = [m.to_dict() for m in transcript(ref_state)]
    for cut in range(len(events) + 1):
        prefix = events[:cut]
        if any(status_at(prefix, c) == "running" for c in ("w1", "s1")):
            continue  # an unknown outcome legitimately changes what the model reads
        state = RunState.rebuild("run", start_messages("do it"), prefix, decisions=[DECISION])
        await run_agent(
            state, scenario_provider(), scenario_toolbox(), ListSink(), LoopSettings(), RiskPolicy()
        )
        assert [m.to_dict() for m in transcript(state)] == expected, cut


async def test_state_round_trips_through_plain_json():
    state, events, _ = await reference_run()
    data = json.loads(json.dumps(state.to_dict(), ensure_ascii=False))
    again = RunState.from_dict(data)
    assert again.to_dict() == state.to_dict()
    assert [m.to_dict() for m in transcript(again)] == [m.to_dict() for m in transcript(state)]


async def test_apply_is_idempotent_for_replayed_events():
    state, events, _ = await reference_run()
    twice = RunState.rebuild("run", start_messages("do it"), events + events, decisions=[DECISION])
    once = RunState.rebuild("run", start_messages("do it"), events, decisions=[DECISION])
    assert twice.rounds == once.rounds and twice.calls == once.calls


@pytest.mark.parametrize("idempotent", [True, False])
async def test_running_side_effecting_call_of_idempotent_tool_is_run_again(idempotent):
    provider = ScriptedProvider(
        lambda req: (
            reply(calls=[call("w1", "write_file", {"path": "b"})]) if rounds_so_far(req) == 0 else reply("ok")
        )
    )
    tool = info("write_file", {"path": {"type": "string"}}, risk="low", idempotent=idempotent)
    toolbox = FuncToolbox({"write_file": (tool, returning("w"))})
    sink = ListSink()
    state = RunState.start("run", start_messages())
    await run_agent(state, provider, toolbox, sink, LoopSettings(), RiskPolicy())
    events = [e for e in sink.events if isinstance(e, DURABLE)]
    cut = (
        next(i for i, e in enumerate(events) if isinstance(e, ToolCallChanged) and e.status == "running") + 1
    )
    resumed = RunState.rebuild("run", start_messages(), events[:cut])
    toolbox2 = FuncToolbox({"write_file": (tool, returning("w"))})
    await run_agent(resumed, provider, toolbox2, ListSink(), LoopSettings(), RiskPolicy())
    assert len(toolbox2.executed) == (1 if idempotent else 0)
    record = resumed.call(0, 0)
    assert record.status == ("succeeded" if idempotent else "unknown")
    if not idempotent:
        assert json.loads(record.result)["code"] == "outcome_unknown"


async def test_a_call_that_needs_a_sign_in_is_held_and_sent_after_the_resume_and_nothing_runs_twice():
    """A tool answering ``sign_in_required`` sent nothing: the call is approved again (not failed),
    the other call of the response finishes, the loop stops with NextStepSignIn; rebuilt from the
    stored events and run again (someone signed in), only the held call runs."""
    from agent.loop import AllowAll, NextStepSignIn
    from agent.toolbox import ToolOutcome

    signed_in = False

    async def notes(_):
        if not signed_in:
            return ToolOutcome.failure("sign_in_required", "notes needs a sign-in; tools/call was not sent")
        return {"noted": True}

    def toolbox():
        return FuncToolbox(
            {
                "append_file": (
                    info("append_file", {"path": {"type": "string"}}, risk="low"),
                    returning({"ok": 1}),
                ),
                "notes__add": (info("notes__add", {"text": {"type": "string"}}, server="notes"), notes),
            }
        )

    def respond(req):
        if rounds_so_far(req) == 0:
            return reply(
                calls=[call("a1", "append_file", {"path": "log"}), call("n1", "notes__add", {"text": "x"})]
            )
        return reply("done")

    state, sink, first = RunState.start("run", start_messages("do it")), ListSink(), toolbox()
    step = await run_agent(state, ScriptedProvider(respond), first, sink, LoopSettings(), AllowAll())
    assert step == NextStepSignIn(servers=("notes",))
    assert {c.name: (c.status, c.error_code) for c in state.calls.values()} == {
        "append_file": ("succeeded", None),
        "notes__add": ("approved", "sign_in_required"),
    }
    assert len([e for e in sink.events if isinstance(e, RoundFinished)]) == 1  # the model was not asked again

    signed_in = True
    durable = [e for e in sink.events if isinstance(e, DURABLE)]
    resumed = RunState.rebuild("run", start_messages("do it"), durable)
    second = toolbox()
    step = await run_agent(resumed, ScriptedProvider(respond), second, sink, LoopSettings(), AllowAll())
    assert step == NextStepFinalOutput(text="done")
    assert [name for name, _ in first.executed] == ["append_file", "notes__add"]
    assert [name for name, _ in second.executed] == ["notes__add"]  # append_file is not run again
    assert resumed.calls[(0, 1)].status == "succeeded"
