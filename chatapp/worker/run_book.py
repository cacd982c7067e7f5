"""What a run's recorder keeps about the segment beyond its frames.

The text of the round in flight (stored as the partial answer if the run fails or is stopped), the
tool links the segment asked (closed when it ends, ``links.py``) and the definitions of the tools it
offered (stored with each call, so approvers see the exact definition that was offered).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from chatapp.redaction import redact


@dataclass
class RunBook:
    partial_text: list[str] = field(default_factory=list)
    link_ids: list[int] = field(default_factory=list)
    tool_infos: dict[str, Any] = field(default_factory=dict)  # name -> ToolInfo
    # Of the rounds this segment finished: the counts the tokenizer calibration compares the next
    # round with; and the shrink steps of the round after (as stored), by round index.
    finished_counts: dict[int, dict[str, Any]] = field(default_factory=dict)
    compressions: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # The run's first delivery: nothing was stored before this segment, so its first round too is
    # known without reading back.
    fresh: bool = False

    def note(self, event: ev.Event) -> None:
        """Every event of the run, in order (already redacted)."""
        if isinstance(event, ev.TextDelta):
            self.partial_text.append(event.text)
        elif isinstance(event, ev.RoundStarted | ev.RoundFinished):
            self.partial_text.clear()
        if isinstance(event, ev.RoundFinished):
            self.finished_counts[event.round_index] = {
                "request": {"raw_input_tokens": event.request.get("raw_input_tokens")},
                "usage": {"prompt_tokens": event.usage.prompt_tokens},
            }

    def note_compression(self, round_index: int, payload: dict[str, Any]) -> None:
        """A shrink step as it is stored (its row's payload without the version)."""
        stored = json.loads(json.dumps({k: v for k, v in payload.items() if k != "v"}))
        self.compressions.setdefault(round_index, []).append(stored)

    def rounds_before(self, round_index: int) -> dict[str, Any] | None:
        """What storing round ``round_index`` would otherwise read back (``store._store_round``):
        known only when this segment finished the round before it, since then every event of this
        round was emitted by this segment (a stored round is replayed, never finished again); or
        when it is the first round of the run's first delivery."""
        if round_index - 1 not in self.finished_counts and not (self.fresh and round_index == 0):
            return None
        return {
            "counts_before": self.finished_counts.get(round_index - 1),
            "compressions": self.compressions.get(round_index, []),
        }

    def extra_for(self, event: ev.Event) -> dict[str, Any]:
        """What ``store.persist_durable`` stores with the event besides its payload."""
        if isinstance(event, ev.RoundFinished):
            known = self.rounds_before(event.round_index)
            return {"rounds_before": known} if known else {}
        if isinstance(event, ev.RunFailed):
            return {"partial_text": redact("".join(self.partial_text))}
        if isinstance(event, ev.ToolCallChanged) and event.name in self.tool_infos:
            info = self.tool_infos[event.name]
            definition = info.spec.to_dict() | {"server": info.server, "risk": info.risk, "hints": info.hints}
            return {"definition": definition, "definition_hash": info.definition_hash or ""}
        return {}
