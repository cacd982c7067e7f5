"""List and decide tool calls waiting for approval, through the same code path as the admin.

    manage.py approvals --json
    manage.py approvals approve CALL --as ADMIN_USERNAME --reason TEXT
    manage.py approvals deny CALL --as ADMIN_USERNAME --reason TEXT

CALL is the tool call's number (``id`` in the listing) or its provider call id.
"""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from chatapp.management.migrated import MigratedCommand
from chatapp.models import ToolCall
from chatapp.services import approvals
from chatapp.services.errors import ChatError


def describe(call: ToolCall) -> dict:
    return {
        "id": call.pk,
        "call_id": call.call_id,
        "run_id": call.run_id,
        "conversation_id": call.run.conversation_id,
        "user": call.run.conversation.owner.get_username(),
        "name": call.name,
        "server": call.server or None,
        "arguments": call.arguments,
        "risk": call.risk,
        "definition": call.definition,
        "definition_hash": call.definition_hash,
        "since": call.created_at.isoformat(),
    }


class Command(MigratedCommand):
    help = "List pending tool-call approvals, or approve/deny one."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", nargs="?", choices=["list", "approve", "deny"], default="list")
        parser.add_argument("call", nargs="?")
        parser.add_argument("--as", dest="as_user")
        parser.add_argument("--reason", default="")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        if options["action"] == "list":
            rows = [describe(c) for c in approvals.pending()]
            if options["json"]:
                self.stdout.write(json.dumps(rows, ensure_ascii=False))
            else:
                for row in rows:
                    self.stdout.write(
                        f"{row['id']}: {row['name']} {row['arguments']} (run {row['run_id']}, {row['user']})"
                    )
            return
        if not options["call"] or not options["as_user"]:
            raise CommandError("approve/deny need CALL and --as ADMIN_USERNAME")
        user = get_user_model().objects.filter(username=options["as_user"]).first()
        if user is None:
            raise CommandError(f"No user named {options['as_user']!r}")
        call = self._call(options["call"])
        try:
            approval = approvals.decide(
                call.pk, user, approve=options["action"] == "approve", reason=options["reason"]
            )
        except ChatError as exc:
            raise CommandError(str(exc)) from exc
        result = {
            "id": call.pk,
            "call_id": call.call_id,
            "decision": approval.decision,
            "by": user.get_username(),
            "reason": approval.reason,
        }
        self.stdout.write(
            json.dumps(result, ensure_ascii=False) if options["json"] else f"{approval.decision}"
        )

    def _call(self, ref: str) -> ToolCall:
        query = (
            ToolCall.objects.filter(pk=int(ref)) if ref.isdigit() else ToolCall.objects.filter(call_id=ref)
        )
        matches = list(query.select_related("run__conversation")[:2])
        if len(matches) != 1:
            raise CommandError(f"No single tool call matches {ref!r}")
        return matches[0]
