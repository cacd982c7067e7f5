"""Provider configurations: the demo model, and defaults from the environment."""

from __future__ import annotations

from django.conf import settings

from chatapp.models import ProviderConfig
from chatapp.services.errors import ProviderUnavailable

DEMO_NAME = "demo"


def ensure_env_providers() -> None:
    """Create or refresh providers described by environment variables (idempotent)."""
    if settings.DEMO_MODE or settings.DEBUG:
        ProviderConfig.objects.update_or_create(
            name=DEMO_NAME,
            defaults={
                "label": "Demo model",
                "kind": ProviderConfig.Kind.OPENAI_CHAT,
                "preset": "demo",
                "base_url": settings.DEMO_MODEL_URL,
                "model": "clearloop-demo",
                "context_window": 32_000,
                "max_output_tokens": 2048,
                "preset_origin": "",
                "is_demo": True,
            },
        )
    # The preset comes from OPENAI_PRESET, else it is guessed from the base URL's host; either way
    # ``preset_origin`` says which, and the admin shows it (chatapp/env_providers.py).
    if settings.OPENAI_API_KEY and settings.OPENAI_MODEL and settings.OPENAI_PROVIDER:
        ProviderConfig.objects.update_or_create(
            name="openai",
            defaults={
                **settings.OPENAI_PROVIDER,
                "base_url": settings.OPENAI_BASE_URL,
                "model": settings.OPENAI_MODEL,
                "api_key_env": "OPENAI_API_KEY",
            },
        )
    if settings.ANTHROPIC_API_KEY and settings.ANTHROPIC_MODEL and settings.ANTHROPIC_PROVIDER:
        ProviderConfig.objects.update_or_create(
            name="anthropic",
            defaults={
                **settings.ANTHROPIC_PROVIDER,
                "base_url": settings.ANTHROPIC_BASE_URL,
                "model": settings.ANTHROPIC_MODEL,
                "api_key_env": "ANTHROPIC_API_KEY",
            },
        )


def default_provider() -> ProviderConfig:
    ensure_env_providers()
    provider = (
        ProviderConfig.objects.filter(enabled=True).exclude(name=DEMO_NAME).order_by("name").first()
        or ProviderConfig.objects.filter(enabled=True, name=DEMO_NAME).first()
    )
    if provider is None:
        raise ProviderUnavailable(
            "No model provider is configured. Set OPENAI_API_KEY and OPENAI_MODEL, add one in the admin, "
            "or run in demo mode."
        )
    return provider


def provider_by_name(name: str) -> ProviderConfig:
    ensure_env_providers()
    provider = ProviderConfig.objects.filter(name=name, enabled=True).first()
    if provider is None:
        raise ProviderUnavailable(f"No enabled provider named {name!r}.")
    return provider
