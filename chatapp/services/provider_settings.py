"""A ``ProviderConfig`` row as the engine's ``ProviderSettings``: the one place the admin's provider
settings (key, preset, knobs, limits) become what ``agent.providers`` builds a client from. Used by
the worker to drive a run and by the admin's probes to test a provider the same way.
"""

from __future__ import annotations

from typing import cast

from agent.providers import profiles
from agent.providers.knobs import Knobs
from agent.providers.settings import ProviderKind, ProviderSettings
from chatapp.models import ProviderConfig
from chatapp.secrets import provider_key


def provider_settings(config: ProviderConfig, model: str) -> ProviderSettings:
    key = provider_key(config)
    return ProviderSettings(
        name=config.name,
        kind=cast(ProviderKind, config.kind),  # one of ProviderConfig.kind's choices
        base_url=config.base_url,
        model=model or config.model,
        api_key=key,
        preset=config.preset,
        context_window=config.context_window,
        max_output_tokens=config.max_output_tokens,
        extra_headers=dict(config.extra_headers or {}),
        capability_overrides=dict(config.capability_overrides or {}),
        extra_body=dict(config.extra_body or {}),
        knobs=config_knobs(config),
        idle_timeout=config.idle_timeout,
        total_timeout=config.total_timeout,
        max_retries=config.max_retries,
    )


def config_knobs(config: ProviderConfig) -> Knobs:
    return Knobs(
        reasoning_effort=config.reasoning_effort or None,
        thinking={"on": True, "off": False}.get(config.thinking),
        thinking_budget=config.thinking_budget,
    )


def max_output_tokens(config: ProviderConfig, model: str) -> int:
    """The admin's output limit, else the preset's default (thinking counts against it)."""
    if config.max_output_tokens:
        return config.max_output_tokens
    caps = profiles.resolve(config.preset, model or config.model, config.capability_overrides or None)
    return caps.default_max_output_tokens or 4096
