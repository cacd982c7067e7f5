"""What a run's recorder keeps about the segment beyond its frames.

The text of the round in flight (stored as the partial answer if the run fails or is stopped), the
tool links the segment asked (closed when it ends, ``links.py``) and the definitions of the tools it
offered (stored with each call, so approvers see the exact definition that was offered).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from chatapp.redaction import redact


@dataclass
class RunBook:
    partial_text: list[str] = field(default_factory=list)
    link_ids: list[int] = field(default_factory=list)
    tool_infos: dict[str, Any] = field(default_factory=dict)  # name -> ToolInfo

    def note(self, event: ev.Event) -> None:
        """Every event of the run, in order (already redacted)."""
        if isinstance(event, ev.TextDelta):
            self.partial_text.append(event.text)
        elif isinstance(event, ev.RoundStarted | ev.RoundFinished):
            self.partial_text.clear()

    def extra_for(self, event: ev.Event) -> dict[str, Any]:
        """What ``store.persist_durable`` stores with the event besides its payload."""
        if isinstance(event, ev.RunFailed):
            return {"partial_text": redact("".join(self.partial_text))}
        if isinstance(event, ev.ToolCallChanged) and event.name in self.tool_infos:
            info = self.tool_infos[event.name]
            definition = info.spec.to_dict() | {"server": info.server, "risk": info.risk, "hints": info.hints}
            return {"definition": definition, "definition_hash": info.definition_hash or ""}
        return {}
