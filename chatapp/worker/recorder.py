"""The engine's Sink in the worker: durable rows first, then a frame to the conversation's group.

Token deltas are coalesced (one frame per ``STREAM_COALESCE_MS`` per run, never one message per
token). Every frame gets the run's next sequence number and is written to the event log before it
is published, so a client that reconnects can always back-fill from the database without a gap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from channels.layers import get_channel_layer

from agent import events as ev
from agent.toolbox import LinkAnswer, LinkRequest
from chatapp import frames
from chatapp.event_codec import event_payload, event_type
from chatapp.event_log import Sequence
from chatapp.frame_limits import fold_stored_delta, split_text
from chatapp.frames import Kind
from chatapp.redaction import redact, redact_event, shown
from chatapp.worker import crash, links, store
from chatapp.worker.fanout import publish_many
from chatapp.worker.frame_batch import LiveFrame
from chatapp.worker.runtime import WorkerRuntime

_DELTAS = (ev.TextDelta, ev.ReasoningDelta, ev.ToolCallDelta)
# One structured record per request, tool call, result and token count (R-RUN-6), secrets redacted
# by the logging filter configured in settings.
trace_log = logging.getLogger("clearloop.trace")


def _request_summary(request: dict[str, Any]) -> dict[str, Any]:
    # The whole request is in the database; the log line names what was sent without repeating it.
    wire = request.get("wire") or {}
    return {
        "url": wire.get("url"),
        "messages": len(request.get("messages") or []),
        "tools": [t.get("name") for t in request.get("tools") or []],
        "tool_choice": request.get("tool_choice"),
        "estimated_input_tokens": request.get("estimated_input_tokens"),
    }


def structured(run_id: int, seq: int, kind: str, payload: dict[str, Any]) -> str:
    record: dict[str, Any] = {"run": run_id, "seq": seq, "event": kind}
    if kind == "round_finished":
        record |= {
            "round": payload["round_index"],
            "model": payload["model"],
            "provider": payload["provider"],
            "finish": payload["finish_reason"],
            "finish_raw": payload["finish_reason_raw"],
            "usage": {k: v for k, v in payload["usage"].items() if k != "raw"},
            "ttft_ms": payload["ttft_ms"],
            "duration_ms": payload["duration_ms"],
            "request": _request_summary(payload["request"]),
        }
    elif kind == "tool_call":
        record |= {
            k: payload.get(k)
            for k in (
                "round_index",
                "call_id",
                "name",
                "server",
                "status",
                "arguments",
                "result",
                "error_code",
                "duration_ms",
            )
        }
    else:
        record |= payload
    return json.dumps(record, ensure_ascii=False, default=str)


class RunRecorder:
    def __init__(
        self, runtime: WorkerRuntime, run_id: int, conversation_id: int, start_seq: int, coalesce_ms: int
    ) -> None:
        self.runtime = runtime
        self.run_id = run_id
        self.lease = ""  # set by the driver; durable writes are refused once another worker holds it
        self.group = frames.group(conversation_id)
        # The run's frame numbers: this worker owns them while it holds the lease (event_log.py).
        self.seqs = Sequence(start_seq)
        self.coalesce = coalesce_ms / 1000
        self.layer = get_channel_layer()
        self._pending: list[ev.Event] = []
        self._last_flush = 0.0
        self._write_latency = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()
        self.stopped = runtime.cancels.watch(run_id)  # set when the user stops the run
        self.partial_text: list[str] = []
        self.link_ids: list[int] = []  # ToolLinks this segment asked (links.py)
        # name -> ToolInfo of the tools offered in this run, so approvers see the exact definition.
        self.tool_infos: dict[str, Any] = {}  # text of the round in flight, kept if the run is stopped

    async def emit(self, event: ev.Event) -> None:
        event = redact_event(event)  # one redaction for all that is stored, logged and published
        if isinstance(event, _DELTAS):
            if isinstance(event, ev.TextDelta):
                self.partial_text.append(event.text)
            self._pending.append(event)
            window = self._window()
            if time.monotonic() - self._last_flush >= window:
                await self.flush()
            elif self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(window, self._flush_soon)
            return
        await self.flush()
        if isinstance(event, ev.RoundStarted | ev.RoundFinished):
            self.partial_text.clear()
        if isinstance(event, ev.DURABLE):
            await self._durable(event)
        else:
            await self._ephemeral(event_type(event), event_payload(event))

    def _window(self) -> float:
        # Under load (the loop runs late, the database answers slower) wider frames mean fewer
        # writes and messages per token, which is what lets one worker carry many runs.
        busy = max(2 * self._write_latency, 4 * self.runtime.lag)
        return max(self.coalesce, min(0.5, busy))

    def _flush_soon(self) -> None:
        self._timer = None
        asyncio.ensure_future(self.flush())

    async def flush(self) -> None:
        async with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not self._pending:
                return
            pending, self._pending = self._pending, []
            self._last_flush = time.monotonic()
            for payload in split_text(merge_deltas(pending)):
                await self._ephemeral(Kind.DELTA, fold_stored_delta(payload))

    async def _ephemeral(self, kind: str, payload: dict[str, Any]) -> None:
        payload = redact(payload)
        seq = self.seqs.next()
        started = time.monotonic()
        # Stored, then published, together with the frames of the worker's other runs.
        await self.runtime.frames.put(LiveFrame(self.run_id, seq, kind, payload, self.group))
        self._write_latency = time.monotonic() - started

    async def _durable(self, event: ev.Event) -> None:
        seq = self.seqs.next()
        # The replay blocks are stored as received (they go back to the provider); what is logged
        # and published is the shown form.
        kind, payload = event_type(event), redact(event_payload(event), keep_replay=True)
        extra: dict[str, Any] = {}
        if isinstance(event, ev.RunFailed):
            extra["partial_text"] = redact("".join(self.partial_text))
        elif isinstance(event, ev.ToolCallChanged) and event.name in self.tool_infos:
            info = self.tool_infos[event.name]
            extra["definition"] = info.spec.to_dict() | {
                "server": info.server,
                "risk": info.risk,
                "hints": info.hints,
            }
            extra["definition_hash"] = info.definition_hash or ""
        moved = await self.runtime.db(
            store.persist_durable, self.run_id, seq, kind, payload, event, extra, self.lease, self.seqs
        )
        crash.after_stored(kind, payload)
        visible = shown(payload)
        trace_log.info(structured(self.run_id, seq, kind, visible))
        await self._publish(seq, kind, visible)
        # The status move the event made (waiting for approval, the end) follows it, in order.
        await self.publish_frames(moved)

    async def publish_frames(self, stored: list[frames.Frame]) -> None:
        for item in stored:
            await self._publish(item["seq"], item["type"], item["data"])

    async def _publish(self, seq: int, kind: str, payload: dict[str, Any]) -> None:
        message = LiveFrame(self.run_id, seq, kind, payload, self.group).message()
        try:
            async with self.runtime.publish_slots:
                # Through the same path as the batched frames: one clock orders all of them.
                await publish_many(self.layer, [(self.group, message)])
        except Exception:  # noqa: BLE001 - Redis down: the frame is in the event log; clients back-fill
            logging.getLogger(__name__).warning("publishing a frame failed", exc_info=True)

    async def ask_link(self, request: LinkRequest, timeout: float) -> LinkAnswer:
        """Show a tool server's link to the run's user and wait for their answer (links.py)."""
        return await links.ask(self, request, timeout)

    async def publish_link(self, link_id: int, state: str, request: LinkRequest) -> None:
        # The page renders the link from its row; the frame says which, for whom and in what state.
        await self.flush()
        await self._ephemeral(
            Kind.LINK, {"id": link_id, "state": state, "call_id": request.call_id, "tool": request.tool}
        )

    async def stop_reason(self) -> str | None:
        """A budget used up since the run started (issue 13): the loop stops before the next round."""
        from chatapp.services.quotas import stop_reason

        return await self.runtime.db(stop_reason, self.run_id)

    async def is_cancelled(self) -> bool:
        return self.run_id in self.runtime.cancels.cancelled

    def close(self) -> None:
        self.runtime.cancels.unwatch(self.run_id)


def merge_deltas(events: list[ev.Event]) -> dict[str, Any]:
    """Fold a batch of deltas into one frame payload, keeping tool-argument fragments per call."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    round_index = 0
    for event in events:
        round_index = getattr(event, "round_index", round_index)  # only deltas are batched
        if isinstance(event, ev.TextDelta):
            text.append(event.text)
        elif isinstance(event, ev.ReasoningDelta):
            reasoning.append(event.text)
        elif isinstance(event, ev.ToolCallDelta):
            call = calls.setdefault(event.index, {"index": event.index, "arguments": ""})
            if event.call_id:
                call["call_id"] = event.call_id
            if event.name:
                call["name"] = event.name
            call["arguments"] += event.arguments
    return {
        "round_index": round_index,
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tool_calls": list(calls.values()),
    }
