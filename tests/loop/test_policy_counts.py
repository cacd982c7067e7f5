"""The policy hook is told how often the run already started the proposed tool (``executed_before``),
from the run's state: a host's per-run limit needs no read of its store per call."""

from __future__ import annotations

from loop_doubles import FuncToolbox, ScriptedProvider, call, drive, info, reply, returning, rounds_so_far

from agent.loop import PolicyDecision, ProposedCall


class Recording:
    def __init__(self, deny_from: int) -> None:
        self.seen: list[tuple[str, int]] = []
        self.deny_from = deny_from

    async def check(self, proposal: ProposedCall) -> PolicyDecision:
        self.seen.append((proposal.call_id, proposal.executed_before))
        if proposal.executed_before >= self.deny_from:
            return PolicyDecision("deny", "limit")
        return PolicyDecision("allow")


async def test_each_proposal_carries_the_started_calls_of_its_tool_and_denied_ones_do_not_count():
    def answers(request):
        done = rounds_so_far(request)
        if done == 0:
            return reply(calls=[call("a", "read", {"n": 0}), call("b", "other", {})])
        if done in (1, 2):  # other arguments each time: a repeated call is refused before the policy
            return reply(calls=[call(f"r{done}", "read", {"n": done})])
        return reply("done")

    read = info("read", {"n": {"type": "integer"}})
    tools = FuncToolbox({"read": (read, returning("x")), "other": (info("other"), returning("y"))})
    policy = Recording(deny_from=2)
    step, state, _ = await drive(ScriptedProvider(answers), tools, policy=policy)
    # read: none started before "a", one before "r1", two before "r2" (denied: not started, not counted).
    assert policy.seen == [("a", 0), ("b", 0), ("r1", 1), ("r2", 2)]
    assert state.executed_count("read") == 2
    assert [name for name, _ in tools.executed] == ["read", "other", "read"]
