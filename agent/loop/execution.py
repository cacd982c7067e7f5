"""Running validated calls: all of one response concurrently, each with a timeout (R-LOOP-2, R-LOOP-5).

Results are written to the call's own record (keyed by round and index, carrying its call id), so the
order in which calls finish never matters: the transcript lists tool messages in tool_calls order.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from agent.deadline import Deadline
from agent.events import ToolProgress
from agent.loop.emit import call_changed, emit
from agent.loop.guards import repeated_failure
from agent.loop.results import REPEATED_ERROR_HINT, error_content, success_content
from agent.loop.settings import LoopSettings
from agent.sink import Sink
from agent.state import RunState, ToolCallRecord
from agent.toolbox import (
    AskLinkFn,
    LinkAnswer,
    LinkRequest,
    ProgressFn,
    Toolbox,
    ToolContext,
    ToolInfo,
    ToolOutcome,
)


async def execute_calls(
    state: RunState,
    records: list[ToolCallRecord],
    tools: dict[str, ToolInfo],
    toolbox: Toolbox,
    sink: Sink,
    settings: LoopSettings,
) -> list[str]:
    """Run the calls; returns the servers some of them wait for a sign-in to (those calls are
    "approved" again: nothing was sent)."""
    if not records:
        return []
    ctx = ToolContext(
        run_key=state.run_key,
        workspace=settings.workspace,
        timeout=settings.tool_timeout,
        max_timeout=settings.tool_timeout_max,
    )
    async with asyncio.TaskGroup() as group:
        tasks = [
            group.create_task(_run_one(state, record, tools[record.name], toolbox, sink, settings, ctx))
            for record in records
        ]
    return [server for task in tasks if (server := task.result()) is not None]


async def invoke(
    toolbox: Toolbox,
    name: str,
    arguments: dict,
    ctx: ToolContext,
    timeout: float,
    max_timeout: float | None = None,
    on_progress: ProgressFn | None = None,
    on_link: AskLinkFn | None = None,
    link_wait: float = 300.0,
) -> ToolOutcome:
    """Run one call under a deadline that the tool's progress reports push back (up to ``max_timeout``)
    and that stops while the user is asked to open a link (up to ``link_wait``)."""
    deadline = Deadline(timeout, max_timeout)

    async def progress(value: float, total: float | None, message: str | None) -> None:
        deadline.extend()
        if on_progress is not None:
            await on_progress(value, total, message)

    async def ask_link(request: LinkRequest) -> LinkAnswer:
        if on_link is None:
            return "decline"
        if not request.wait:
            return await on_link(request)
        async with deadline.paused(link_wait + 5):
            return await on_link(request)

    call_ctx = replace(ctx, timeout=timeout, max_timeout=deadline.hard, progress=progress, ask_link=ask_link)
    try:
        async with deadline.running():
            return await toolbox.execute(name, arguments, call_ctx)
    except TimeoutError:
        return ToolOutcome.failure("timeout", f"{name} did not answer within {deadline.describe()}")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a tool bug must reach the model as a tool error, not kill the run
        return ToolOutcome.failure("execution_error", f"{type(exc).__name__}: {exc}")


def progress_reporter(
    state: RunState, record: ToolCallRecord, sink: Sink, settings: LoopSettings
) -> ProgressFn:
    """Publishes a call's progress as ``ToolProgress``, at most once per ``progress_interval``, and
    nothing once the call has an outcome (a late report must not look like a call still running)."""
    last = [float("-inf")]

    async def report(value: float, total: float | None, message: str | None) -> None:
        if state.calls[record.key].status != "running":
            return
        now = time.monotonic()
        finished = total is not None and value >= total
        if now - last[0] < settings.progress_interval and not finished:
            return
        last[0] = now
        event = ToolProgress(
            round_index=record.round_index,
            index=record.index,
            call_id=record.call_id,
            name=record.name,
            progress=value,
            total=total,
            message=message[:200] if message else None,
        )
        await emit(state, sink, event)

    return report


def link_asker(record: ToolCallRecord, sink: Sink, settings: LoopSettings) -> AskLinkFn | None:
    """Hands a call's link to the host (``Sink.ask_link``), naming the call it belongs to."""
    ask = getattr(sink, "ask_link", None)
    if ask is None:
        return None

    async def ask_link(request: LinkRequest) -> LinkAnswer:
        request = replace(request, call_id=record.call_id, tool=record.name, round_index=record.round_index)
        return await ask(request, settings.link_wait)

    return ask_link


async def _with_rate_limit_retries(
    toolbox: Toolbox,
    record: ToolCallRecord,
    ctx: ToolContext,
    settings: LoopSettings,
    on_progress: ProgressFn,
    on_link: AskLinkFn | None,
    on_retry: Callable[[int], Awaitable[None]] | None = None,
) -> tuple[ToolOutcome, int]:
    arguments = json.loads(record.arguments or "{}")
    tries = 0
    while True:
        tries += 1
        if tries > 1 and on_retry is not None:
            await on_retry(tries)
        outcome = await invoke(
            toolbox,
            record.name,
            arguments,
            ctx,
            settings.tool_timeout,
            settings.tool_timeout_max,
            on_progress,
            on_link,
            settings.link_wait,
        )
        if outcome.ok or outcome.code != "rate_limited" or tries > settings.rate_limit_retries:
            return outcome, tries
        wait = outcome.retry_after if outcome.retry_after is not None else 1.0
        if wait > settings.max_rate_limit_wait:
            return outcome, tries
        # Waiting is the documented recovery for rate limits (004 §6.1); bounded by the two settings.
        await asyncio.sleep(wait)


async def _run_one(
    state: RunState,
    record: ToolCallRecord,
    info: ToolInfo,
    toolbox: Toolbox,
    sink: Sink,
    settings: LoopSettings,
    ctx: ToolContext,
) -> str | None:
    """Run one call to its outcome; returns its server when it waits for a sign-in instead."""
    attempts = record.attempts + 1
    await emit(
        state, sink, call_changed(record, "running", attempts=attempts, risk=info.risk, server=info.server)
    )
    started = time.monotonic()
    reporter = progress_reporter(state, record, sink, settings)
    asker = link_asker(record, sink, settings)

    async def retrying(tries: int) -> None:
        # Each new try is a "running" of its own (attempts counted on): the timeline draws every try.
        again = call_changed(state.calls[record.key], "running", attempts=attempts + tries - 1)
        await emit(state, sink, again)

    outcome, tries = await _with_rate_limit_retries(
        toolbox, record, ctx, settings, reporter, asker, retrying
    )
    duration_ms = (time.monotonic() - started) * 1000
    running = state.calls[record.key]
    if outcome.code == "sign_in_required":
        # Nothing reached the tool: the call is approved again and runs after the sign-in (a
        # resumed run sends it then; calls that finished meanwhile are terminal and stay as they are).
        await emit(state, sink, call_changed(running, "approved", error_code="sign_in_required"))
        return info.server or record.server or "?"
    if outcome.ok:
        content, cut = success_content(
            record.name, outcome.content, anchors=settings.result_anchors, cap=settings.result_cap_chars
        )
        event = call_changed(
            running,
            "succeeded",
            result=content,
            is_error=False,
            error_code=None,
            truncated=cut or outcome.truncated,
            attempts=attempts + tries - 1,
            duration_ms=duration_ms,
            media=tuple(part.to_dict() for part in outcome.media),
        )
    else:
        error = outcome.error or outcome.code
        hint = None
        if outcome.code == "execution_error" and repeated_failure(state, record.name, record.key, error):
            hint = REPEATED_ERROR_HINT
        event = call_changed(
            running,
            "failed",
            result=error_content(outcome.code, error, hint),
            is_error=True,
            error_code=outcome.code,
            attempts=attempts + tries - 1,
            duration_ms=duration_ms,
        )
    await emit(state, sink, event)
    return None


async def mark_unknown(state: RunState, record: ToolCallRecord, sink: Sink) -> None:
    """A side-effecting call left running by a crash: never repeated, reported as unknown (R-RUN-2)."""
    content = error_content(
        "outcome_unknown", f"{record.name} was interrupted while running; its outcome is unknown"
    )
    await emit(
        state,
        sink,
        call_changed(record, "unknown", result=content, is_error=True, error_code="outcome_unknown"),
    )
