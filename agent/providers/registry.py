"""Build a provider from configuration: the one entry point the rest of the app uses.

    provider = build_provider(settings, http)        # http: the worker's shared httpx.AsyncClient
    trace_request = provider.describe_request(request)   # what will be sent, secrets removed
    async for event in provider.stream(request): ...

**How the trace gets "the request actually sent" (R-MSG-2).** Every adapter builds its JSON body
with a pure function of the request, the settings and the capability profile, once per
``stream()`` call, and sends that same body on every retry. ``provider.describe_request(request)``
calls that function and returns ``{"method", "url", "headers", "body"}`` passed through
``redact_request``: credential headers (Authorization, x-api-key, anything named like a key or
token) are never included and the API key value is replaced wherever it appears. The loop calls
it right before ``stream()`` and stores the result with the round. We chose a pure method over a
``last_request`` attribute because one provider object serves many concurrent runs in a worker,
and over a new stream event because the event union is closed and shared with the loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from agent.providers import knobs, profiles
from agent.providers.anthropic import AnthropicProvider
from agent.providers.http import HttpProvider, Sleep
from agent.providers.openai_chat import OpenAIChatProvider
from agent.providers.openai_responses import OpenAIResponsesProvider
from agent.providers.redact import redact_request
from agent.providers.settings import ProviderKind, ProviderSettings

ADAPTERS: dict[str, type[HttpProvider]] = {
    "openai_chat": OpenAIChatProvider,
    "openai_responses": OpenAIResponsesProvider,
    "anthropic": AnthropicProvider,
}

__all__ = [
    "ADAPTERS",
    "ProviderKind",
    "ProviderSettings",
    "build_provider",
    "describe_request",
    "redact_request",
]


def build_provider(
    settings: ProviderSettings, http: httpx.AsyncClient, *, sleep: Sleep = asyncio.sleep
) -> HttpProvider:
    """The adapter for ``settings.kind`` with its resolved capability profile.

    ``http`` is owned by the caller (one per worker process) and is never closed here.
    ``sleep`` is how retries wait; tests pass a recorder.
    """
    capabilities = profiles.resolve(settings.preset, settings.model, settings.capability_overrides)
    if capabilities.kind != settings.kind:
        raise ValueError(
            f"preset {settings.preset!r} is for {capabilities.kind!r} providers, not {settings.kind!r}"
        )
    knobs.validate_knobs(settings.knobs, capabilities, settings.preset)
    knobs.validate_extra_body(settings.extra_body)
    return ADAPTERS[settings.kind](settings, http, capabilities, sleep=sleep)


def describe_request(provider: Any, request: Any) -> dict[str, Any] | None:
    """``provider.describe_request(request)`` when the provider has one (test doubles may not)."""
    method = getattr(provider, "describe_request", None)
    return method(request) if callable(method) else None
