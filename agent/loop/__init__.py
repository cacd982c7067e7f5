"""The agent loop: pure async code over RunState and a Sink, returning next-step values.

    run_agent(state, provider, toolbox, sink, settings, policy) -> NextStep   # until final/interrupt/fail
    run_step(state, provider, toolbox, sink, settings, policy) -> NextStep    # one step

See ``docs/agent-loop.md`` for the state machine, the resumption contract, guards and the budget.
"""

from agent.loop.policy import AllowAll, PolicyDecision, PolicyHook, ProposedCall, RiskPolicy
from agent.loop.runner import offered_tools, run_agent, run_step
from agent.loop.settings import LoopSettings
from agent.loop.steps import (
    NextStep,
    NextStepFailed,
    NextStepFinalOutput,
    NextStepInterruption,
    NextStepRunAgain,
    NextStepSignIn,
    PendingApproval,
)

__all__ = [
    "AllowAll",
    "LoopSettings",
    "NextStep",
    "NextStepFailed",
    "NextStepFinalOutput",
    "NextStepInterruption",
    "NextStepRunAgain",
    "NextStepSignIn",
    "PendingApproval",
    "PolicyDecision",
    "PolicyHook",
    "ProposedCall",
    "RiskPolicy",
    "offered_tools",
    "run_agent",
    "run_step",
]
