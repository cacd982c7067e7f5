"""The context window of a run, checked against what the model's server really runs with."""

from __future__ import annotations

import dataclasses

import httpx

from agent.context.budget import ContextLimits
from agent.providers import ollama
from agent.providers.profiles import Capabilities
from agent.providers.settings import ProviderSettings


async def served_limits(
    http: httpx.AsyncClient, limits: ContextLimits, settings: ProviderSettings, caps: Capabilities | None
) -> ContextLimits:
    """``limits`` with the window lowered to the server's, for presets that can ask (Ollama)."""
    if caps is None or caps.context_probe != "ollama":
        return limits
    served = await ollama.served_context_length(http, settings.base_url, settings.model)
    window = ollama.effective_window(limits.context_window, served, caps.default_context_window)
    if not window or window == limits.context_window:
        return limits
    # A small served window leaves little room: the output cap shrinks with it (output_budget).
    return dataclasses.replace(limits, context_window=window)
