"""R-LOOP-1 (the loop, bounded) and R-LOOP-2 (parallel calls, results matched by id)."""

import asyncio

from loop_doubles import FuncToolbox, ScriptedProvider, call, drive, info, reply, returning, rounds_so_far

from agent.events import RoundFinished, RunFinished, ToolCallChanged
from agent.loop import LoopSettings, NextStepFinalOutput


async def test_r_loop_1_text_answer_ends_the_run_in_one_round():
    provider = ScriptedProvider(lambda req: reply("just text"))
    step, state, sink = await drive(provider, FuncToolbox({}))
    assert step == NextStepFinalOutput("just text")
    assert len(provider.requests) == 1 and provider.requests[0].tools == ()
    assert sink.of_type(RunFinished)[0].text == "just text"
    assert state.outcome.kind == "finished"


async def test_r_loop_1_tool_calls_loop_until_text():
    def respond(req):
        n = rounds_so_far(req)
        return reply(calls=[call(f"c{n}", "step", {"n": n})]) if n < 2 else reply("finished")

    toolbox = FuncToolbox({"step": (info("step", {"n": {"type": "integer"}}), returning("ok"))})
    step, _, _ = await drive(ScriptedProvider(respond), toolbox)
    assert step.text == "finished"
    assert [a for _, a in toolbox.executed] == [{"n": 0}, {"n": 1}]


async def test_r_loop_1_bounded_by_max_iterations_default_10():
    def respond(req):
        n = rounds_so_far(req)
        if req.tool_choice == "none":
            return reply("out of steps")
        return reply(calls=[call(f"c{n}", f"t{n % 5}", {"n": n})])

    tools = {f"t{i}": (info(f"t{i}", {"n": {"type": "integer"}}), returning("ok")) for i in range(5)}
    provider = ScriptedProvider(respond)
    step, state, sink = await drive(provider, FuncToolbox(tools), settings=LoopSettings(max_same_tool=100))
    assert step.text == "out of steps"
    kinds = [r.kind for r in sink.of_type(RoundFinished)]
    assert kinds == ["normal"] * 10 + ["final"]


async def test_r_loop_2_calls_of_one_response_run_concurrently():
    # Each tool waits for the other to have started: run one after the other, they would deadlock
    # (and hit the tool timeout). No sleeps, no timing measurements.
    a_started, b_started = asyncio.Event(), asyncio.Event()

    async def tool_a(_):
        a_started.set()
        await b_started.wait()
        return "a"

    async def tool_b(_):
        b_started.set()
        await a_started.wait()
        return "b"

    def respond(req):
        if rounds_so_far(req) == 0:
            return reply(calls=[call("ca", "a", {}), call("cb", "b", {})])
        return reply("both done")

    toolbox = FuncToolbox({"a": (info("a"), tool_a), "b": (info("b"), tool_b)})
    step, state, _ = await drive(ScriptedProvider(respond), toolbox, settings=LoopSettings(tool_timeout=5))
    assert step.text == "both done"
    assert [c.status for c in state.calls_of_round(0)] == ["succeeded", "succeeded"]


async def test_r_loop_2_results_matched_by_id_when_second_call_finishes_first():
    second_done = asyncio.Event()

    async def slow_first(_):
        await second_done.wait()
        return {"who": "first"}

    async def fast_second(_):
        second_done.set()
        return {"who": "second"}

    def respond(req):
        if rounds_so_far(req) == 0:
            return reply(calls=[call("id-first", "first", {}), call("id-second", "second", {})])
        return reply("ok")

    toolbox = FuncToolbox({"first": (info("first"), slow_first), "second": (info("second"), fast_second)})
    provider = ScriptedProvider(respond)
    _, _, sink = await drive(provider, toolbox, settings=LoopSettings(tool_timeout=5, result_anchors=False))
    finished = [e.call_id for e in sink.of_type(ToolCallChanged) if e.status == "succeeded"]
    assert finished == ["id-second", "id-first"]  # completion order ...
    tool_messages = [m for m in provider.requests[1].messages if m.role == "tool"]
    # ... never decides the pairing: tool_calls order, each content under its own id.
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [
        ("id-first", '{"who": "first"}'),
        ("id-second", '{"who": "second"}'),
    ]
