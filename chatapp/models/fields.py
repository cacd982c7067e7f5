"""A JSON object field whose literal string values are encrypted at rest (issue 16, M10).

Used for MCP servers' ``env`` and ``headers``: in Python the object holds plain values (forms, the
mcpServers import/export and the worker see what was entered); in the database every literal value is
``fernet:<token>``. ``env:NAME`` references are not secrets and stay readable. Values whose key names a
credential or that look like one are registered with the redactor whenever they are loaded, so an MCP
server that echoes them is redacted like a provider key. Rows written before this field (plain values)
are read as they are and encrypted on their next save (migration 0006 re-saves them).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import models
from psycopg.types.json import Jsonb

from chatapp.redaction import register_secret, secret_named
from chatapp.secrets import SecretUnreadable, decrypt, encrypt

log = logging.getLogger(__name__)

ENCRYPTED_PREFIX = "fernet:"
REFERENCE_PREFIX = "env:"


def _is_literal(value: Any) -> bool:
    prefixes = (REFERENCE_PREFIX, ENCRYPTED_PREFIX)
    return isinstance(value, str) and bool(value) and not value.startswith(prefixes)


class EncryptedValuesJSONField(models.JSONField):
    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            value = {k: ENCRYPTED_PREFIX + encrypt(v) if _is_literal(v) else v for k, v in value.items()}
        return super().get_prep_value(value)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        value = super().from_db_value(value, expression, connection)
        if not isinstance(value, dict):
            return value
        plain = {}
        for key, item in value.items():
            if isinstance(item, str) and item.startswith(ENCRYPTED_PREFIX):
                try:
                    item = decrypt(item[len(ENCRYPTED_PREFIX) :])
                except SecretUnreadable:
                    # The key was rotated: keep the token (saving keeps it too); re-enter the value.
                    log.warning("an MCP env/header value (%s) cannot be decrypted with the current key", key)
            if _is_literal(item) and secret_named(str(key), item):
                register_secret(item)
            plain[key] = item
        return plain


# --- large values stored once (chatapp/blobs.py) ------------------------------------------------
def _is_expression(value: Any) -> bool:
    return hasattr(value, "resolve_expression")


class LargeValuesJSONField(models.JSONField):
    """A JSON field whose long strings are stored once in ``Blob`` and referenced from the row.

    Packing happens on save only (``get_db_prep_save``: inserts, updates, bulk writes), never for a
    lookup's value; loading resolves every reference, so Python sees the whole value.
    """

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        from chatapp import blobs

        if value is not None and not _is_expression(value):
            if connection.vendor == "postgresql":
                # Encoded once (json_text), and packed only when the text shows something to pack.
                text = blobs.packed_json(value, connection.alias)
                return Jsonb(value, dumps=lambda _value: text)
            value = blobs.pack(value, connection.alias)
        return super().get_db_prep_save(value, connection)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        from chatapp import blobs

        # A row without "$" in its text holds no reference: no walk over it (most rows, most frames).
        marked = not isinstance(value, str) or '"$' in value
        value = super().from_db_value(value, expression, connection)
        return blobs.unpack(value, connection.alias) if marked else value


class LargeTextField(models.TextField):
    """A text field stored once in ``Blob`` when it is long (see ``LargeValuesJSONField``)."""

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        from chatapp import blobs

        if isinstance(value, str):
            value = blobs.pack_text(value, connection.alias)
        return super().get_db_prep_save(value, connection)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        from chatapp import blobs

        if isinstance(value, str) and value.startswith("\u2060"):
            return blobs.unpack_text(value, connection.alias)
        return value
