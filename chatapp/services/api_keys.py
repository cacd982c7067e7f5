"""Creating, checking and revoking API keys: one path for the key page, the admin and ``manage.py apikey``.

A failed check says only "invalid API key": a malformed key, an unknown prefix, a wrong secret, a
revoked or an expired key all read the same, so a caller learns nothing about which part was wrong.
Failures are counted per client address and minute; past ``API_KEY_FAILURES_PER_MINUTE`` the
address gets 429 until the minute is over, whatever it sends.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from chatapp.audit import record
from chatapp.models import ApiAuthFailure, ApiKey
from chatapp.services.errors import ChatError

SCOPES = tuple(ApiKey.Scope.values)
KEY_RE = re.compile(r"^clk_([A-Za-z0-9]{12})_([A-Za-z0-9_-]{43})$")
# Anything that looks like one of our keys, wherever it appears (query strings are logged by proxies).
KEY_IN_TEXT = re.compile(r"clk_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{20,}")
LAST_USED_EVERY = timedelta(seconds=60)  # one write a minute per key, not one per request
MAX_KEYS_PER_USER = 50


class KeyRefused(ChatError):
    """A key request we refuse (bad scope, past expiry...); the message is shown."""


class InvalidKey(Exception):
    """The one answer to every failed check; deliberately without detail."""


class TooManyFailures(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__("Too many failed API key attempts from this address.")
        self.retry_after = retry_after


@dataclass(frozen=True)
class NewKey:
    key: ApiKey
    secret: str  # the whole key, shown once


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def parse_scopes(raw: str | list[str]) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else raw
    scopes = sorted({s.strip() for s in items if s.strip()})
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise KeyRefused(f"Scopes must be some of: {', '.join(SCOPES)} (got {', '.join(unknown) or 'none'}).")
    return scopes


def create_key(
    user: Any, name: str, scopes: str | list[str], *, expires_at: datetime | None = None, actor: str = ""
) -> NewKey:
    name = (name or "").strip()[:100]
    if not name:
        raise KeyRefused(_("Give the key a name, so you can tell it from the others later."))
    scope_list = parse_scopes(scopes)
    if "approve" in scope_list:
        from chatapp.services.approvals import may_approve

        if not may_approve(user):
            raise KeyRefused(
                _("%(user)s may not approve tool calls, so a key cannot either.")
                % {"user": user.get_username()}
            )
    if expires_at is not None and expires_at <= timezone.now():
        raise KeyRefused(_("The expiry date is in the past."))
    if ApiKey.objects.filter(user=user, revoked_at__isnull=True).count() >= MAX_KEYS_PER_USER:
        raise KeyRefused(_("You have %(n)s active keys; revoke one first.") % {"n": MAX_KEYS_PER_USER})
    for _attempt in range(5):
        prefix = "".join(
            secrets.choice("abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _char in range(12)
        )
        secret = f"clk_{prefix}_{secrets.token_urlsafe(32)}"
        try:
            with transaction.atomic():
                key = ApiKey.objects.create(
                    user=user,
                    name=name,
                    prefix=prefix,
                    key_hash=_digest(secret),
                    scopes=scope_list,
                    expires_at=expires_at,
                )
                record(
                    "api_key_created",
                    actor=actor or user.get_username(),
                    payload={
                        "key": key.pk,
                        "prefix": prefix,
                        "user": user.get_username(),
                        "scopes": scope_list,
                    },
                )
            return NewKey(key, secret)
        except IntegrityError:
            continue  # the prefix was taken: draw another
    raise KeyRefused(_("Could not draw a unique key; try again."))


def revoke_key(key: ApiKey, by: Any) -> bool:
    """True when this call revoked it (False: it was revoked already)."""
    with transaction.atomic():
        changed = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_by=by
        )
        if changed:
            record(
                "api_key_revoked",
                actor=by.get_username() if by else "system",
                payload={"key": key.pk, "prefix": key.prefix, "user": key.user.get_username()},
            )
    key.refresh_from_db()
    return bool(changed)


def _window() -> datetime:
    return timezone.now().replace(second=0, microsecond=0)


def check_address(address: str) -> None:
    row = ApiAuthFailure.objects.filter(address=address, window=_window()).first()
    if row and row.count >= settings.API_KEY_FAILURES_PER_MINUTE:
        raise TooManyFailures(retry_after=60 - timezone.now().second)


def note_failure(address: str) -> None:
    window = _window()
    with transaction.atomic():
        row, _ = ApiAuthFailure.objects.get_or_create(address=address, window=window)
        ApiAuthFailure.objects.filter(pk=row.pk).update(count=F("count") + 1)
    ApiAuthFailure.objects.filter(window__lt=window - timedelta(minutes=10)).delete()


def authenticate(raw: str) -> ApiKey:
    """The key for a presented secret, or InvalidKey (the same for every reason)."""
    match = KEY_RE.match(raw or "")
    if not match:
        raise InvalidKey
    key = ApiKey.objects.select_related("user").filter(prefix=match[1]).first()
    if key is None or not hmac.compare_digest(key.key_hash, _digest(raw)):
        raise InvalidKey
    now = timezone.now()
    if key.revoked_at or (key.expires_at and key.expires_at <= now) or not key.user.is_active:
        raise InvalidKey
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_EVERY:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key
