"""API keys for ops and scripts, through the same service as the key page.

    manage.py apikey create --user NAME --name LABEL --scopes chat,traces [--expires-days N]
    manage.py apikey list [--user NAME] [--json]
    manage.py apikey revoke PREFIX_OR_ID [--as ADMIN_USERNAME]

``create`` prints the new key once, alone on stdout (for ``$(...)``); it is never shown again.
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils import timezone

from chatapp.management.migrated import MigratedCommand
from chatapp.models import ApiKey
from chatapp.services import api_keys


def _user(name: str):
    user = get_user_model().objects.filter(username=name).first()
    if user is None:
        raise CommandError(f"No user named {name!r}.")
    return user


class Command(MigratedCommand):
    help = "Create, list or revoke API keys."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["create", "list", "revoke"])
        parser.add_argument("key", nargs="?", help="revoke: the key's prefix (clk_PREFIX_...) or id")
        parser.add_argument("--user")
        parser.add_argument("--name", default="")
        parser.add_argument("--scopes", default="chat")
        parser.add_argument("--expires-days", type=int)
        parser.add_argument("--as", dest="as_user")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        getattr(self, f"_{options['action']}")(options)

    def _create(self, options) -> None:
        if not options["user"]:
            raise CommandError("--user is required.")
        days = options["expires_days"]
        if days is not None and days <= 0:
            raise CommandError("--expires-days must be a positive number of days.")
        expires = timezone.now() + timedelta(days=days) if days else None
        try:
            new = api_keys.create_key(
                _user(options["user"]),
                options["name"],
                options["scopes"],
                expires_at=expires,
                actor="manage.py",
            )
        except api_keys.KeyRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(new.secret)
        self.stderr.write(
            f"Key {new.key.name!r} for {options['user']} ({', '.join(new.key.scopes)}); shown once."
        )

    def _list(self, options) -> None:
        keys = ApiKey.objects.select_related("user")
        if options["user"]:
            keys = keys.filter(user=_user(options["user"]))
        rows = [
            {
                "id": k.pk,
                "prefix": k.prefix,
                "name": k.name,
                "user": k.user.get_username(),
                "scopes": k.scopes,
                "created_at": k.created_at.isoformat(),
                "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None,
                "expires_at": k.expires_at.isoformat() if k.expires_at else None,
                "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
            }
            for k in keys
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for r in rows:
            state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "active"
            self.stdout.write(
                f"{r['id']}  clk_{r['prefix']}_…  {r['user']}  {r['name']}  {','.join(r['scopes'])}  "
                f"last used {r['last_used_at'] or 'never'}  {state}"
            )

    def _revoke(self, options) -> None:
        ref = (options["key"] or "").strip()
        prefix = ref.split("_")[1] if ref.startswith("clk_") and ref.count("_") >= 1 else ref
        key = ApiKey.objects.select_related("user").filter(prefix=prefix).first()
        if key is None and ref.isdigit():
            key = ApiKey.objects.select_related("user").filter(pk=int(ref)).first()
        if key is None:
            raise CommandError(f"No key {ref!r}.")
        by = _user(options["as_user"]) if options["as_user"] else None
        if not api_keys.revoke_key(key, by):
            raise CommandError(f"The key {key} was revoked already.")
        self.stdout.write(f"Revoked {key}.")
