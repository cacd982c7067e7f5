"""What a provider requires back, verbatim, in the next request of a tool loop (issue 10, item 1).

Reasoning models hand out pieces of their turn that the next request must carry unchanged, or the
provider answers 400 (or silently reasons from scratch). The engine keeps them as ``ReplayBlock``s on
the assistant turn (``ChoiceResult.replay`` -> ``Message.replay``) and per tool call
(``AssembledToolCall.provider_extra`` -> ``ToolCall.provider_extra``), stores them with the round,
and each request builder decides from its capability profile whether and where to send them back:

* Anthropic ``thinking`` (text + ``signature``) and ``redacted_thinking`` (``data``) blocks;
* OpenAI Responses ``reasoning`` items (``id`` + ``encrypted_content``);
* OpenRouter-style ``reasoning_details`` entries on Chat Completions;
* Gemini's ``extra_content.google.thought_signature`` on a tool call (``provider_extra``).

Plain reasoning *text* (DeepSeek/Qwen ``reasoning_content``, vLLM/Ollama ``reasoning``) is
``Message.reasoning``; it is not opaque, but some providers also require it back (see the Chat
builder). ``data`` is the provider's JSON object exactly as received (streams assembled), never
edited: a single changed byte invalidates a signature.

The trace never shows the opaque parts; ``summarise`` turns them into "opaque, N bytes".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Fields whose value is a provider-sealed blob: shown as their size only.
OPAQUE_FIELDS = frozenset({"signature", "encrypted_content", "thought_signature"})
# ``data`` is opaque only in these block types (elsewhere it is an ordinary field name).
_OPAQUE_DATA_TYPES = frozenset({"redacted_thinking", "reasoning.encrypted"})


@dataclass(frozen=True, slots=True)
class ReplayBlock:
    """One opaque piece of an assistant turn, tagged with the wire it came from.

    ``wire`` is the adapter kind (``anthropic``, ``openai_responses``, ``openai_chat``): a block is
    only ever sent back on the wire that produced it. ``type`` is the provider's own type name.
    """

    wire: str
    type: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"wire": self.wire, "type": self.type, "data": self.data}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ReplayBlock:
        return cls(wire=str(raw["wire"]), type=str(raw["type"]), data=dict(raw.get("data") or {}))

    @property
    def text(self) -> str:
        """The readable reasoning this block carries, if any (thinking text, summaries)."""
        data = self.data
        if isinstance(data.get("thinking"), str):
            return data["thinking"]
        if isinstance(data.get("text"), str):
            return data["text"]
        if isinstance(data.get("summary"), list):
            return "\n\n".join(s.get("text", "") for s in data["summary"] if isinstance(s, dict))
        if isinstance(data.get("summary"), str):
            return data["summary"]
        return ""

    @property
    def opaque_bytes(self) -> int:
        """Size of the sealed parts (signature, encrypted content, redacted data) in UTF-8 bytes."""
        return opaque_size(self.data)


def blocks_from_dicts(raw: Any) -> tuple[ReplayBlock, ...]:
    """Stored rows written before replay existed have no such key: they load as no blocks."""
    if not isinstance(raw, list):
        return ()
    return tuple(ReplayBlock.from_dict(b) for b in raw if isinstance(b, dict) and "wire" in b and "type" in b)


def _sealed(key: str, item: Any, kind: str | None) -> bool:
    return isinstance(item, str) and (key in OPAQUE_FIELDS or (key == "data" and kind in _OPAQUE_DATA_TYPES))


def opaque_size(value: Any, kind: str | None = None) -> int:
    """UTF-8 size of the sealed parts of a JSON value (signatures, encrypted content)."""
    if isinstance(value, dict):
        kind = value.get("type") if isinstance(value.get("type"), str) else kind
        total = 0
        for key, item in value.items():
            if _sealed(key, item, kind):
                total += len(item.encode())
            else:
                total += opaque_size(item, kind)
        return total
    if isinstance(value, list):
        return sum(opaque_size(v, kind) for v in value)
    return 0


def opaque_label(size: int) -> str:
    return f"[opaque, {size} bytes]"


def summarise(value: Any, kind: str | None = None) -> Any:
    """A copy of a JSON value with every sealed blob replaced by ``[opaque, N bytes]``.

    Used for what the trace stores and shows of a request or a replay block: the bytes themselves
    are kept once, with the round that produced them, and never rendered.
    """
    if isinstance(value, dict):
        kind = value.get("type") if isinstance(value.get("type"), str) else kind
        out: dict[str, Any] = {}
        for key, item in value.items():
            if _sealed(key, item, kind):
                out[key] = opaque_label(len(item.encode()))
            else:
                out[key] = summarise(item, kind)
        return out
    if isinstance(value, list):
        return [summarise(v, kind) for v in value]
    return value

