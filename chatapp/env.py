"""Strict parsers for settings taken from the environment.

A value that does not parse raises ``ImproperlyConfigured`` naming the variable, so a typo in a
deployment fails at start-up instead of silently turning a feature off.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    """The value of NAME, or of the file named by NAME_FILE (for secrets mounted as files)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {file_name}: {exc}") from exc
    return os.environ.get(name)


def env_str(name: str, default: str | None = None) -> str | None:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}: expected a boolean (1/0, true/false, yes/no, on/off), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: expected an integer, got {value!r}") from exc
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {number}")
    return number


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    value = _raw(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = float(value.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: expected a number, got {value!r}") from exc
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {number}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return default
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name}: empty item in comma-separated list {value!r}")
    return items


def env_url(name: str, default: str | None, *, schemes: tuple[str, ...]) -> str | None:
    value = env_str(name, default)
    if value is None:
        return None
    parsed = urlparse(value)
    if parsed.scheme not in schemes or not (parsed.netloc or parsed.path):
        raise ImproperlyConfigured(f"{name}: expected a URL with scheme {'/'.join(schemes)}, got {value!r}")
    return value


def env_origins(name: str) -> list[str]:
    origins = env_list(name, [])
    for origin in origins:
        parsed = urlparse(origin)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ImproperlyConfigured(f"{name}: {origin!r} is not an origin like https://chat.example.com")
    return origins
