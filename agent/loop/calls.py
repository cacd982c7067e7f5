"""Settling the tool calls of one response: screen, ask for approvals, recover, execute.

Every call moves through durable statuses (ARCHITECTURE "run state machine"):
proposed -> invalid | denied | awaiting_approval -> approved | denied -> running -> succeeded | failed
| unknown, and running -> approved when nothing was sent because a server needs a sign-in (the run
waits; ``NextStepSignIn``). Each call is picked up again from whatever status is stored, so this
function can be entered any number of times for the same round.
"""

from __future__ import annotations

from agent.events import ApprovalRequested
from agent.loop.emit import call_changed, emit
from agent.loop.execution import execute_calls, mark_unknown
from agent.loop.policy import PolicyHook, ProposedCall
from agent.loop.results import error_content
from agent.loop.settings import LoopSettings
from agent.loop.steps import NextStepInterruption, NextStepSignIn, PendingApproval
from agent.loop.validation import validate_call
from agent.providers.types import AssembledToolCall
from agent.sink import Sink
from agent.state import RoundRecord, RunState, ToolCallRecord
from agent.toolbox import Toolbox, ToolInfo


async def settle_round(
    state: RunState,
    record: RoundRecord,
    tools: dict[str, ToolInfo],
    toolbox: Toolbox,
    sink: Sink,
    settings: LoopSettings,
    policy: PolicyHook,
) -> NextStepInterruption | NextStepSignIn | None:
    """Bring every call of ``record`` to a terminal status, or stop for approvals or a sign-in."""
    for index, call in enumerate(record.choice.tool_calls):
        await _screen(state, record, index, call, tools, sink, settings, policy)
    pending = await _apply_decisions(state, record, sink)
    if pending:
        ids = tuple(p.call_id for p in pending)
        if not state.approval_requests or state.approval_requests[-1] != ids:
            await emit(state, sink, ApprovalRequested(round_index=record.round_index, call_ids=ids))
        return NextStepInterruption(approvals=tuple(pending))
    signed_out = await _recover_and_execute(state, record, tools, toolbox, sink, settings)
    if signed_out:
        return NextStepSignIn(servers=tuple(sorted(set(signed_out))))
    return None


async def _screen(
    state: RunState,
    record: RoundRecord,
    index: int,
    call: AssembledToolCall,
    tools: dict[str, ToolInfo],
    sink: Sink,
    settings: LoopSettings,
    policy: PolicyHook,
) -> None:
    existing = state.call(record.round_index, index)
    if existing is None:
        proposed = ToolCallRecord(record.round_index, index, call.id, call.name, call.arguments_raw)
        info = tools.get(call.name)
        if info is not None:
            proposed.risk, proposed.server = info.risk, info.server
        await emit(state, sink, call_changed(proposed, "proposed", truncated=call.truncated))
        existing = state.call(record.round_index, index)
    assert existing is not None
    if existing.status != "proposed":
        return
    verdict = validate_call(
        state,
        record.round_index,
        index,
        call,
        tools,
        finish_reason=record.choice.finish_reason,
        max_same_tool=settings.max_same_tool,
    )
    if not verdict.ok:
        content = error_content(verdict.code or "invalid_arguments", verdict.error or "", verdict.hint)
        await emit(
            state,
            sink,
            call_changed(existing, "invalid", result=content, is_error=True, error_code=verdict.code),
        )
        return
    executed = state.executed_count(call.name)  # what a per-run limit counts (policy.py)
    proposal = ProposedCall(
        state.run_key, call.id, call.name, verdict.arguments or {}, tools[call.name], executed_before=executed
    )
    decision = await policy.check(proposal)
    if decision.action == "allow":
        await emit(state, sink, call_changed(existing, "approved"))
    elif decision.action == "needs_approval":
        await emit(state, sink, call_changed(existing, "awaiting_approval"))
    else:
        await _deny(state, existing, sink, decision.reason or "denied by policy")


async def _deny(state: RunState, record: ToolCallRecord, sink: Sink, reason: str) -> None:
    content = error_content("denied", f"{record.name} was not run: {reason}")
    await emit(
        state, sink, call_changed(record, "denied", result=content, is_error=True, error_code="denied")
    )


async def _apply_decisions(state: RunState, record: RoundRecord, sink: Sink) -> list[PendingApproval]:
    pending: list[PendingApproval] = []
    for call in state.calls_of_round(record.round_index):
        if call.status != "awaiting_approval":
            continue
        decision = state.decisions.get(call.call_id)
        if decision is None:
            pending.append(
                PendingApproval(
                    call.call_id,
                    call.name,
                    call.arguments,
                    call.round_index,
                    call.index,
                    risk=call.risk,
                    server=call.server,
                )
            )
        elif decision.approved:
            await emit(state, sink, call_changed(call, "approved"))
        else:
            await _deny(state, call, sink, decision.reason or "an administrator denied the call")
    return pending


async def _recover_and_execute(
    state: RunState,
    record: RoundRecord,
    tools: dict[str, ToolInfo],
    toolbox: Toolbox,
    sink: Sink,
    settings: LoopSettings,
) -> list[str]:
    """Returns the servers that need a sign-in before some of these calls can be sent."""
    to_run: list[ToolCallRecord] = []
    for call in state.calls_of_round(record.round_index):
        info = tools.get(call.name)
        if call.status == "approved" and info is not None:
            to_run.append(call)
        elif call.status == "approved":
            # The tool vanished between approval and execution (server removed): say so, run nothing.
            content = error_content("unknown_tool", f"{call.name} is no longer available")
            await emit(
                state,
                sink,
                call_changed(call, "failed", result=content, is_error=True, error_code="unknown_tool"),
            )
        elif call.status == "running":
            if info is not None and (info.risk == "read_only" or info.idempotent):
                to_run.append(call)  # safe to run again after a crash
            else:
                await mark_unknown(state, call, sink)
    return await execute_calls(state, to_run, tools, toolbox, sink, settings)
