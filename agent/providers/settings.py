"""Provider configuration, as the admin or the environment gives it (re-exported by ``registry``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agent.providers.knobs import Knobs

ProviderKind = Literal["openai_chat", "openai_responses", "anthropic"]

DEFAULT_PRESET: dict[str, str] = {
    "openai_chat": "openai",
    "openai_responses": "openai_responses",
    "anthropic": "anthropic",
}


@dataclass(slots=True)
class ProviderSettings:
    """One configured endpoint + model.

    ``base_url`` follows the vendors' SDKs: for the OpenAI kinds it includes ``/v1``
    (``https://api.openai.com/v1``, ``http://localhost:11434/v1``); for Anthropic it may or may not
    (``https://api.anthropic.com`` and ``https://api.anthropic.com/v1`` both work).
    ``preset`` names a capability profile (``profiles.PRESETS``); empty means the kind's default.
    ``capability_overrides`` replaces single fields of that profile, e.g. ``{"stream": False}``.
    ``knobs`` and ``extra_body`` add request fields (see ``knobs.py``). ``None`` for the output
    limit and the timeouts means the preset's default (``Capabilities.default_*``).
    """

    name: str
    kind: ProviderKind
    base_url: str
    model: str
    api_key: str | None = None
    preset: str = ""
    context_window: int | None = None
    max_output_tokens: int | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)
    capability_overrides: dict[str, Any] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)
    knobs: Knobs = field(default_factory=Knobs)
    idle_timeout: float | None = None
    total_timeout: float | None = None
    max_retries: int = 2
    # Backoff bounds and the longest server-requested wait we sleep through (see retry.py).
    retry_initial_backoff: float = 0.5
    retry_max_backoff: float = 8.0
    retry_max_after: float = 30.0  # = the loop's max_round_retry_wait: a longer wait fails fast

    def __post_init__(self) -> None:
        if self.kind not in DEFAULT_PRESET:
            raise ValueError(f"unknown provider kind {self.kind!r}; expected one of {sorted(DEFAULT_PRESET)}")
        if not self.preset:
            self.preset = DEFAULT_PRESET[self.kind]
        if any(t is not None and t <= 0 for t in (self.idle_timeout, self.total_timeout)):
            raise ValueError("idle_timeout and total_timeout must be positive")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
