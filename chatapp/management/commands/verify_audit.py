"""``manage.py verify_audit``: walk the audit chain and check the content it pins; exit 1 naming the
first broken link or edited row.

``--save-anchor FILE`` appends the verified head (``SEQ:HASH`` and the time) to FILE; keep that file
somewhere the database's operators cannot write (another host, a WORM bucket). ``--anchor-file FILE``
checks against the last head in it, so rows deleted from the tail (or the whole table) are detected.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from chatapp.audit import verify_chain
from chatapp.management.migrated import MigratedCommand


def _anchor(value: str) -> tuple[int, str]:
    match = re.fullmatch(r"(\d+):([0-9a-f]{64})", value.strip())
    if not match:
        raise CommandError("--anchor takes SEQ:HASH, as printed on the head line of an earlier run")
    return int(match.group(1)), match.group(2)


def _anchor_from_file(path: Path) -> tuple[int, str]:
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise CommandError(f"--anchor-file: cannot read {path}: {exc.strerror or exc}") from None
    if not lines:
        raise CommandError(f"--anchor-file: {path} holds no anchor")
    return _anchor(lines[-1].split()[0])


class Command(MigratedCommand):
    help = (
        "Verify the tamper-evident audit log: hashes, prev_hash links, gap-free seq, and that runs, "
        "rounds, tool calls and approvals still hold the content the chain pins."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--anchor",
            metavar="SEQ:HASH",
            help="a head recorded earlier outside the database; catches truncation and removed tail rows",
        )
        parser.add_argument(
            "--anchor-file",
            metavar="FILE",
            help="check against the last head written to FILE by --save-anchor",
        )
        parser.add_argument(
            "--save-anchor",
            metavar="FILE",
            help="after a successful check, append the head to FILE (store it outside the database)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        anchor = _anchor(options["anchor"]) if options.get("anchor") else None
        if options.get("anchor_file"):
            anchor = _anchor_from_file(Path(options["anchor_file"]))
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
            if options.get("save_anchor"):
                with Path(options["save_anchor"]).open("a", encoding="utf-8") as fh:
                    fh.write(f"{result.head_seq}:{result.head_hash} {timezone.now().isoformat()}\n")
