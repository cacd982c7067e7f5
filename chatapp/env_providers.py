"""Provider knobs from the environment: ``<PREFIX>_PRESET``, ``<PREFIX>_EXTRA_BODY`` and friends.

Parsed strictly at start-up like every other setting (``chatapp/env.py``): a preset that does not
exist, an extra body that is not a JSON object or sets a reserved key, an unknown thinking value,
all stop the start with the variable named. The values end up on the ``ProviderConfig`` rows that
``services.providers.ensure_env_providers`` writes.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

from agent.providers import profiles
from agent.providers.knobs import KnobError, validate_extra_body
from chatapp.env import env_float, env_int, env_str

# Host (or host suffix) -> preset, for OpenAI-compatible base URLs whose preset was not given.
HOST_PRESETS: tuple[tuple[str, str], ...] = (
    ("api.deepseek.com", "deepseek"),
    ("aliyuncs.com", "qwen"),  # dashscope.aliyuncs.com, dashscope-intl.aliyuncs.com
    ("generativelanguage.googleapis.com", "gemini"),
    ("openrouter.ai", "openrouter"),
    ("api.anthropic.com", "anthropic"),
)


def guess_preset(base_url: str, api: str = "chat") -> tuple[str, str]:
    """(preset, how it was chosen) for a base URL, from its host; OpenAI's own otherwise."""
    host = (urlparse(base_url).hostname or "").lower()
    for suffix, preset in HOST_PRESETS:
        if host == suffix or host.endswith("." + suffix):
            return preset, f"guessed from the base URL host {host} (set OPENAI_PRESET to choose)"
    default = "openai_responses" if api == "responses" else "openai"
    return default, f"the default for OPENAI_API={api} (host {host or '?'} is not one clearloop knows)"


def _preset(prefix: str) -> str | None:
    name = f"{prefix}_PRESET"
    value = env_str(name)
    if value is not None and value not in profiles.PRESETS:
        raise ImproperlyConfigured(
            f"{name}: unknown preset {value!r}; expected one of {sorted(profiles.PRESETS)}"
        )
    return value


def _extra_body(prefix: str) -> dict[str, Any]:
    name = f"{prefix}_EXTRA_BODY"
    raw = env_str(name)
    if raw is None:
        return {}
    try:
        return validate_extra_body(json.loads(raw))
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(f"{name}: not JSON: {exc}") from exc
    except KnobError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from exc


def _thinking(prefix: str) -> str:
    name = f"{prefix}_THINKING"
    value = (env_str(name) or "").strip().lower()
    if value not in ("", "on", "off"):
        raise ImproperlyConfigured(f"{name}: expected on or off, got {value!r}")
    return value


def _optional_int(name: str) -> int | None:
    value = env_int(name, 0, minimum=0)
    return value or None


def _optional_float(name: str) -> float | None:
    value = env_float(name, 0.0, minimum=0.0)
    return value or None


def provider_env(prefix: str) -> dict[str, Any]:
    """The knobs ``<prefix>_*`` set, as ProviderConfig field values (unset ones left out)."""
    values: dict[str, Any] = {
        "preset": _preset(prefix),
        "extra_body": _extra_body(prefix),
        "reasoning_effort": env_str(f"{prefix}_REASONING_EFFORT", "") or "",
        "thinking": _thinking(prefix),
        "thinking_budget": _optional_int(f"{prefix}_THINKING_BUDGET"),
        "max_output_tokens": _optional_int(f"{prefix}_MAX_OUTPUT_TOKENS"),
        "context_window": _optional_int(f"{prefix}_CONTEXT_WINDOW"),
        "idle_timeout": _optional_float(f"{prefix}_IDLE_TIMEOUT"),
        "total_timeout": _optional_float(f"{prefix}_TOTAL_TIMEOUT"),
        "max_retries": env_int(f"{prefix}_MAX_RETRIES", 2, minimum=0),
    }
    if values["context_window"] is None:
        del values["context_window"]  # the model field has its own default
    return values


def _check_knobs(prefix: str, values: dict[str, Any], model: str) -> None:
    from agent.providers.knobs import Knobs, validate_knobs

    knobs = Knobs(
        reasoning_effort=values["reasoning_effort"] or None,
        thinking={"on": True, "off": False}.get(values["thinking"]),
        thinking_budget=values["thinking_budget"],
    )
    try:
        validate_knobs(knobs, profiles.resolve(values["preset"], model), values["preset"])
    except KnobError as exc:
        raise ImproperlyConfigured(f"{prefix}_*: {exc}") from exc


def openai_provider(base_url: str, api: str, model: str) -> dict[str, Any]:
    """ProviderConfig values for the ``openai`` environment provider (OPENAI_*)."""
    values = provider_env("OPENAI")
    if values["preset"]:
        values["preset_origin"] = "OPENAI_PRESET"
    else:
        values["preset"], values["preset_origin"] = guess_preset(base_url, api)
    values["kind"] = profiles.resolve(values["preset"], model).kind
    if api == "responses" and values["kind"] == "openai_chat" and values["preset_origin"] == "OPENAI_PRESET":
        raise ImproperlyConfigured(
            f"OPENAI_PRESET: {values['preset']!r} is a Chat preset, but OPENAI_API=responses"
        )
    _check_knobs("OPENAI", values, model)
    return values


def anthropic_provider(model: str) -> dict[str, Any]:
    """ProviderConfig values for the ``anthropic`` environment provider (ANTHROPIC_*)."""
    values = provider_env("ANTHROPIC")
    preset = values["preset"] or "anthropic"
    if profiles.resolve(preset, model).kind != "anthropic":
        raise ImproperlyConfigured(f"ANTHROPIC_PRESET: {preset!r} is not an Anthropic preset")
    values.update(
        preset=preset, kind="anthropic", preset_origin="ANTHROPIC_PRESET" if values["preset"] else ""
    )
    _check_knobs("ANTHROPIC", values, model)
    return values
