"""``manage.py verify_audit``: walk the audit chain; exit 1 naming the first broken link."""

from __future__ import annotations

import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatapp.audit import verify_chain


def _anchor(value: str) -> tuple[int, str]:
    match = re.fullmatch(r"(\d+):([0-9a-f]{64})", value.strip())
    if not match:
        raise CommandError("--anchor takes SEQ:HASH, as printed on the head line of an earlier run")
    return int(match.group(1)), match.group(2)


class Command(BaseCommand):
    help = "Verify the tamper-evident audit log: hashes, prev_hash links and gap-free seq."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--anchor",
            metavar="SEQ:HASH",
            help="a head recorded earlier outside the database; catches truncation and removed tail rows",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        anchor = _anchor(options["anchor"]) if options.get("anchor") else None
        result = verify_chain(anchor=anchor)
        if result.broken is not None:
            raise CommandError(
                f"BROKEN at seq {result.broken.seq}: {result.broken.detail} "
                f"({result.count} events verified before it)",
                returncode=1,
            )
        self.stdout.write(f"OK: {result.count} events")
        if result.count:
            self.stdout.write(f"head: {result.head_seq}:{result.head_hash}")
