"""Secrets stored in the database (provider keys, MCP headers) are encrypted with Fernet.

The key comes from ``CLEARLOOP_ENCRYPTION_KEY`` (any string; it is stretched with SHA-256), falling
back to ``SECRET_KEY``. Rotating the key makes stored secrets unreadable: re-enter them.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class SecretUnreadable(Exception):
    pass


def _fernet() -> Fernet:
    material = (settings.FIELD_ENCRYPTION_KEY or settings.SECRET_KEY).encode()
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(material).digest()))


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("a stored secret cannot be decrypted with the current key") from exc
