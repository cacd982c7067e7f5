"""Secrets stored in the database (provider keys, MCP env and headers) are encrypted with Fernet.

The key comes from ``CLEARLOOP_ENCRYPTION_KEY`` (any string; it is stretched with SHA-256), falling
back to ``SECRET_KEY``. Rotating the key makes stored secrets unreadable: re-enter them.

A provider's key is read here and nowhere else (``provider_key``): from an environment variable whose
name matches ``PROVIDER_KEY_ENV_PATTERN`` (so naming ``SECRET_KEY`` or ``DATABASE_URL`` reads nothing,
issue 16 M8), else the stored key. Every key read is registered with the redactor.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from typing import TYPE_CHECKING

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

from chatapp.redaction import register_secret

if TYPE_CHECKING:
    from chatapp.models import ProviderConfig


class SecretUnreadable(Exception):
    pass


def _fernet() -> Fernet:
    material = str(settings.FIELD_ENCRYPTION_KEY or settings.SECRET_KEY).encode()
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(material).digest()))


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("a stored secret cannot be decrypted with the current key") from exc


def key_env_allowed(name: str) -> bool:
    return bool(re.fullmatch(str(settings.PROVIDER_KEY_ENV_PATTERN), name or ""))


def provider_key(config: ProviderConfig) -> str | None:
    """The API key to send to ``config``'s endpoint, or None."""
    key = None
    if config.api_key_env and key_env_allowed(config.api_key_env):
        key = os.environ.get(config.api_key_env)
    if not key and config.api_key_encrypted:
        key = decrypt(config.api_key_encrypted)
    register_secret(key)
    return key
