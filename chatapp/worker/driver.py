"""Drive one run in the worker runtime: load it, rebuild the engine's state, run the loop.

Everything the loop emits goes through the ``RunRecorder`` (durable rows first). The run's state is
rebuilt from stored rows on every delivery, which is what makes a redelivered task after a worker
crash continue where the run stopped (R-RUN-2).
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import Future
from typing import Any

from django.conf import settings

from agent import events as ev
from agent.loop import LoopSettings, NextStepInterruption, NextStepSignIn, run_agent
from agent.mcp import GATEWAY_TOOL
from agent.providers.errors import ProviderError
from chatapp.worker import links, store
from chatapp.worker.context import RunContext, load_context_ahead, load_run_context
from chatapp.worker.lease import hand_back, release_lease, renew_lease, taken_over
from chatapp.worker.recorder import RunRecorder
from chatapp.worker.runtime import WorkerRuntime
from chatapp.worker.start_spans import StartSpans
from chatapp.worker.toolboxes import (
    SignInRequired,
    build_policy,
    build_toolbox,
    host_config_for,
    mcp_pool,
    refresh_catalogues,
)
from chatapp.worker.windows import served_limits

log = logging.getLogger(__name__)
STOP_GRACE = 0.3


async def drive_segment(
    runtime: WorkerRuntime,
    run_id: int,
    lease: str,
    spans: StartSpans | None = None,
    ahead: Future | None = None,
) -> None:
    """One delivery of a run, as the worker's carrier starts it: drive it, then let go of the lease.

    Cancelled only when the worker shuts down with the run unfinished (``carrier.drain``): what the
    run produced is stored, and the lease is handed back without counting a delivery.
    """
    try:
        await drive_run(runtime, run_id, lease, spans, ahead)
    except asyncio.CancelledError:
        await runtime.db(hand_back, run_id, lease)
        log.warning("run %s: handed back unfinished (the worker is shutting down)", run_id)
        raise
    except BaseException:
        await runtime.db(release_lease, run_id, lease)
        raise
    await runtime.db(release_lease, run_id, lease)


async def drive_run(
    runtime: WorkerRuntime,
    run_id: int,
    lease: str,
    spans: StartSpans | None = None,
    ahead: Future | None = None,
) -> None:
    """``ahead``: the context read while the lease was taken (``load_start_ahead``), for a first
    delivery only; read again here when it is missing or failed."""
    spans = spans or StartSpans(run_id)
    spans.mark("driving")
    loaded = await _collect(ahead) if ahead is not None else None
    if loaded is None:
        loaded = await runtime.db(_load_start, run_id)
    ctx, host = loaded
    spans.mark("context")
    # Every durable write checks the lease still holds the run (store.LeaseLost).
    coalesce = settings.STREAM_COALESCE_MS
    recorder = RunRecorder(runtime, run_id, ctx.conversation_id, ctx.last_seq, coalesce, lease)
    recorder.spans = spans
    async with recorder:  # watches the run for a user's stop while it is driven
        await _drive(runtime, ctx, recorder, lease, host)


def _load_start(run_id: int) -> tuple[RunContext, tuple | SignInRequired]:
    """The run's context and its host configuration in one trip to a DB thread, not two."""
    ctx = load_run_context(run_id)
    return ctx, host_config_for(ctx)


def load_start_ahead(run_id: int) -> tuple[RunContext, tuple | SignInRequired] | None:
    """``_load_start`` for a run not taken yet (``context.load_context_ahead``); None if it does not
    apply. The host configuration is read in the same trip (preparing the workspace is idempotent)."""
    ctx = load_context_ahead(run_id)
    return (ctx, host_config_for(ctx)) if ctx is not None else None


async def _collect(ahead: Future) -> tuple[RunContext, tuple | SignInRequired] | None:
    try:
        loaded: tuple[RunContext, tuple | SignInRequired] | None = await asyncio.wrap_future(ahead)
        return loaded
    except Exception:  # noqa: BLE001 - only a head start: the driver reads the context itself
        log.warning("reading a run's context ahead of its lease failed", exc_info=True)
        return None


async def _drive(
    runtime: WorkerRuntime,
    ctx: RunContext,
    recorder: RunRecorder,
    lease: str,
    host: tuple | SignInRequired | None = None,
) -> None:
    run_id = ctx.run_id
    lost = asyncio.Event()
    renewer = asyncio.create_task(_keep_lease(runtime, run_id, lease, lost))
    try:
        if ctx.last_seq > 1:
            # Links a dead worker's calls were waiting on can no longer be answered. A run that has
            # stored nothing but its lease's "running" frame (seq 1) has none: a link is asked by a
            # call whose "running" status is stored first.
            await runtime.db(links.close_pending, run_id)
        # The "running" status frame went out when the lease was taken (services/run_lifecycle.py).
        provider = ctx.build_provider(await runtime.http_client())
        toolbox = await build_toolbox(runtime, ctx, host)
        recorder.spans.mark("toolbox")
        recorder.tool_infos = toolbox.infos
        await _void_stale_approvals(runtime, ctx, toolbox)
        # The workspace toolbox is rooted at this conversation's folder already (see toolboxes.py).
        caps = getattr(provider, "capabilities", None)
        limits = await served_limits(await runtime.http_client(), ctx.limits, ctx.provider_settings, caps)
        loop_settings = LoopSettings(
            limits=limits,
            token_ratio=ctx.token_ratio,
            appended_token_ratio=ctx.appended_token_ratio,
            cjk_tokens_per_char=caps.cjk_tokens_per_char if caps else None,
            # A provider that takes no tool_choice cannot be told "none": the final round sends no tools.
            tool_choice_none_supported=bool(caps and caps.send_tool_choice),
            parallel_tool_calls=True if caps and caps.send_parallel_tool_calls else None,
            # The recorder asks the database at most every 0.25 s, so a check at every stream event is
            # cheap; the default (every 32 events) let a slow model run on for seconds after a stop.
            cancel_check_every=1,
            tool_timeout_max=float(settings.TOOL_MAX_SECONDS),
            link_wait=float(settings.TOOL_LINK_WAIT_SECONDS),
            # One prompt cache per conversation: its runs share their prefix (system, tools, history).
            cache_key=f"clearloop-conversation-{ctx.conversation_id}",
            thinking_prefix_locked=bool(caps and caps.prefix_locked_thinking),
        )
        recorder.spans.mark("agent")
        agent = asyncio.create_task(
            run_agent(ctx.state, provider, toolbox, recorder, loop_settings, build_policy(ctx, runtime))
        )
        stopped = await _stopped_while(agent, recorder, lost)
        if stopped == "lease_lost":
            # Another worker took the run over (this one was thought dead): it is that worker's now.
            log.warning("run %s: lease lost to another worker; stopping here", run_id)
            return
        if stopped:
            await _cancelled(runtime, run_id, recorder)
        elif isinstance(step := await agent, NextStepSignIn):
            # A call found its server needs a sign-in (none yet, or the refresh was refused): the
            # call is "approved" again, unsent; the run parks like below and runs it when resumed.
            await recorder.flush()
            moved = await runtime.db(store.pause_for_sign_in, run_id, recorder.seqs, step.servers)
            await recorder.publish_frames(moved)
        elif isinstance(step, NextStepInterruption):
            # Also when no new ApprovalRequested was emitted (e.g. an approval was voided): the run
            # waits, holding no worker, whatever state the last segment left it in.
            await recorder.flush()
            await recorder.publish_frames(await runtime.db(store.pause_for_approval, run_id, recorder.seqs))
    except SignInRequired as wait:
        # Like an approval wait: the run parks holding no worker; a sign-in's callback re-queues it.
        await recorder.flush()
        moved = await runtime.db(store.pause_for_sign_in, run_id, recorder.seqs, wait.servers)
        await recorder.publish_frames(moved)
    except Exception as exc:  # noqa: BLE001 - a bug must still end the run with a visible reason
        if isinstance(exc, store.LeaseLost) or await runtime.db(taken_over, run_id, lease):
            # Another worker drives the run now (this one was thought dead, or its lease lapsed while
            # it was starved): whatever went wrong here is not the run's failure.
            log.warning("run %s: lease lost to another worker (%s); stopping here", run_id, exc)
            lost.set()
        else:
            await _fail(recorder, exc, lost)
    finally:
        renewer.cancel()
        if not lost.is_set():
            await recorder.flush()
        # No call of this segment waits any more (finished, stopped, crashed or handed back): none of
        # the links it asked stays open. Only its own: a worker that took the run over has its own.
        await runtime.db(links.close_pending, run_id, recorder.link_ids)


async def _fail(recorder: RunRecorder, exc: Exception, lost: asyncio.Event) -> None:
    if isinstance(exc, ProviderError):
        failure = ev.RunFailed(type(exc).__name__, exc.message, exc.code)
    else:
        log.exception("run %s crashed", recorder.run_id, exc_info=exc)
        failure = ev.RunFailed("InternalError", f"{type(exc).__name__}: {exc}", "internal")
    try:
        await recorder.emit(failure)
    except store.LeaseLost:
        lost.set()


async def _void_stale_approvals(runtime: WorkerRuntime, ctx: RunContext, toolbox: Any) -> None:
    if not ctx.state.decisions:
        return
    # Ask the servers of the decided calls, not the cache: a definition changed without
    # notifications/tools/list_changed must void the approval too before the call runs (L2).
    servers = {_server_of(c) for c in ctx.state.calls.values() if c.call_id in ctx.state.decisions}
    await refresh_catalogues(await mcp_pool(runtime), servers)
    await toolbox.list_tools()  # fills toolbox.infos with the definitions offered right now
    hashes = {name: info.definition_hash for name, info in toolbox.infos.items()}
    for call_id in await runtime.db(store.void_stale_approvals, ctx.run_id, hashes):
        ctx.state.decisions.pop(call_id, None)


def _server_of(call: Any) -> str:
    if call.name == GATEWAY_TOOL:
        try:
            return str(json.loads(call.arguments or "{}").get("server") or "")
        except (ValueError, AttributeError):
            return ""
    return call.server or ""


async def _stopped_while(agent: asyncio.Task, recorder: RunRecorder, lost: asyncio.Event) -> str:
    """Wait for the agent; if the user stops the run meanwhile (say, while tools run), cancel it.

    Cancelling the task closes the model's stream and cancels in-flight MCP calls, whose cancellation
    reaches the server (R-RUN-4). Returns "cancelled" when the run was stopped this way, "lease_lost"
    when another worker took the lease, "" otherwise.
    """
    stopped = asyncio.create_task(recorder.stopped.wait())
    taken = asyncio.create_task(lost.wait())
    try:
        await asyncio.wait({agent, stopped, taken}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        # The worker is shutting down (carrier.drain): the agent stops with its driver.
        agent.cancel()
        await asyncio.wait({agent}, timeout=STOP_GRACE)
        raise
    finally:
        stopped.cancel()
        taken.cancel()
    if agent.done():
        return ""
    why = "lease_lost" if lost.is_set() else "cancelled"
    if why == "cancelled":
        # While the model streams, the engine sees the stop at its next event and ends the run
        # itself, keeping the text so far; it is cut off here only if it does not (a tool runs).
        await asyncio.wait({agent}, timeout=STOP_GRACE)
        if agent.done():
            return ""
    agent.cancel()
    try:
        await agent
    except asyncio.CancelledError:
        return why
    return ""  # it finished on its own just before the cancel landed


async def _cancelled(runtime: WorkerRuntime, run_id: int, recorder: RunRecorder) -> None:
    # A call cut off mid-flight may or may not have had its effect: it is unknown, never re-run.
    await runtime.db(store.mark_running_unknown, run_id)
    await recorder.emit(ev.RunFailed("Cancelled", "The run was stopped by the user.", "cancelled"))


async def _keep_lease(runtime: WorkerRuntime, run_id: int, lease: str, lost: asyncio.Event) -> None:
    # Renew well inside the lease: a renewal interval longer than the lease (it was max(5, lease/3))
    # let a redelivered copy of the task take a lease whose owner was still working.
    interval = max(0.5, settings.RUN_LEASE_SECONDS / 3)
    while True:
        await asyncio.sleep(interval)
        try:
            renewed = await runtime.db(renew_lease, run_id, lease)
        except Exception:  # noqa: BLE001 - the database is away: the next renewal tries again
            log.warning("renewing the lease of run %s failed", run_id, exc_info=True)
            continue
        if not renewed and await runtime.db(taken_over, run_id, lease):
            lost.set()
            return
