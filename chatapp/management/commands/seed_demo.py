"""Create the demo accounts, the demo provider and (later) the demo tools. Idempotent; demo mode only."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import CommandError

from chatapp.access import AUDITORS
from chatapp.management.migrated import MigratedCommand
from chatapp.services.providers import ensure_env_providers

DEMO_USERS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("demo", "demo", {}),
    ("admin", "admin", {"is_staff": True, "is_superuser": True}),
    ("auditor", "auditor", {}),
)


class Command(MigratedCommand):
    help = "Create demo users (demo/demo, admin/admin, auditor/auditor), the demo model and demo tools."

    def handle(self, *args, **options) -> None:
        if not settings.DEBUG:
            raise CommandError("seed_demo creates accounts with known passwords; it only runs with DEBUG=1.")
        users = get_user_model()
        for username, password, flags in DEMO_USERS:
            user, _ = users.objects.get_or_create(username=username)
            for key, value in flags.items():
                setattr(user, key, value)
            user.set_password(password)
            user.save()
        auditors, _ = Group.objects.get_or_create(name=AUDITORS)
        auditors.user_set.add(users.objects.get(username="auditor"))
        approvers, _ = Group.objects.get_or_create(name="approvers")
        approvers.permissions.add(Permission.objects.get(codename="approve_toolcall"))
        ensure_env_providers()
        from chatapp.services.demo_tools import seed_demo_tools

        seed_demo_tools(users.objects.get(username="demo"))
        self.stdout.write(
            "Demo logins: demo/demo (chat), admin/admin (admin, approvals), auditor/auditor (traces)"
        )
