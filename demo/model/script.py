"""Deterministic answers: ``[[demo:call ...]]`` first, then trigger behaviours, the seeds' scenarios,
else an echo."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from demo.model.call import call_switch
from demo.model.history import read_turn
from demo.model.plan import Plan
from demo.model.scenarios import SCENARIOS
from demo.model.text import echo, say, split_tokens
from demo.model.triggers import BEHAVIOURS, WIRE_FAULTS

__all__ = ["plan_reply", "split_tokens"]


def plan_reply(body: dict[str, Any]) -> Plan:
    turn = read_turn(body)
    triggers = turn.triggers
    plan: Plan | None = call_switch(turn)
    for name in sorted(triggers & BEHAVIOURS.keys()) if plan is None else ():
        plan = BEHAVIOURS[name](turn)
        if plan is not None:
            break
    for scenario in SCENARIOS if plan is None else ():
        plan = scenario(turn)
        if plan is not None:
            break
    plan = plan or echo(turn)
    if plan.tool_calls and turn.tools_off:
        # tool_choice "none" (or no tools): a well-behaved model answers with what it has.
        done = sum(len(r) for r in turn.rounds)
        plan = say(
            turn, f"根据已有的 {done} 个工具结果作答。", f"Answering with the {done} tool results I have."
        )
    faults = frozenset(triggers & WIRE_FAULTS)
    return replace(plan, faults=faults) if faults else plan
