"""Send one message through the real path (rows, Celery task, worker) and print the finished run.

    manage.py chat --user demo --message "hello" [--conversation ID] [--provider NAME] --json

When no Celery worker answers, a local one (and Redis / daphne if needed) is started for the
duration of the command, so the command works on a fresh checkout too.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from chatapp.devstack import Stack, port_open, worker_serving
from chatapp.frame_follow import Follower
from chatapp.management.migrated import MigratedCommand
from chatapp.models import TERMINAL_STATUSES, Conversation, Run
from chatapp.services.errors import ChatError
from chatapp.services.providers import provider_by_name
from chatapp.services.runs import start_run
from chatapp.services.trace import run_trace

STOP_STATUSES = (*TERMINAL_STATUSES, "awaiting_approval", "awaiting_sign_in")


class Command(MigratedCommand):
    help = "Send a message as a user and wait for the run to finish."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--user", required=True)
        parser.add_argument("--message", required=True)
        parser.add_argument("--conversation", type=int)
        parser.add_argument("--provider")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--timeout", type=float, default=300.0)

    def handle(self, *args, **options) -> None:
        conversation = self._conversation(options)
        stack = None
        if not worker_serving():
            need_web = not port_open("127.0.0.1", settings.PORT)
            self.stderr.write("No Celery worker is running; starting a local one for this command…")
            stack = Stack(port=settings.PORT, with_web=need_web, worker_concurrency=4).start()
        try:
            result = async_to_sync(self._run)(conversation, options["message"], options["timeout"])
        finally:
            if stack is not None:
                stack.stop()
        self._print(result, options["json"])
        if result["status"] == "failed":
            sys.exit(1)

    def _conversation(self, options: dict[str, Any]) -> Conversation:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user named {options['user']!r}")
        if options["conversation"]:
            conversation = Conversation.objects.filter(pk=options["conversation"], owner=user).first()
            if conversation is None:
                raise CommandError(f"{options['user']} has no conversation {options['conversation']}")
        else:
            conversation = Conversation.objects.create(owner=user)
        if options["provider"]:
            try:
                conversation.provider = provider_by_name(options["provider"])
            except ChatError as exc:
                raise CommandError(str(exc)) from exc
            conversation.save(update_fields=["provider"])
        return conversation

    async def _run(self, conversation: Conversation, text: str, timeout: float) -> dict[str, Any]:
        # Subscribe before the run exists so no frame of it can be missed. The frames are only
        # counted (the printed result is read from the database), so a lost subscription just ends
        # the counting.
        live = Follower(conversation.pk, keep_frames=True)
        await live.join()
        try:
            try:
                run = await sync_to_async(start_run)(conversation, text)
            except ChatError as exc:
                raise CommandError(str(exc)) from exc
            deltas = await self._follow(live, run.pk, timeout)
        finally:
            await live.close()
        run = await sync_to_async(Run.objects.get)(pk=run.pk)
        trace = await sync_to_async(run_trace)(run)
        return {**trace, "deltas": deltas, "trace": {k: trace[k] for k in ("rounds", "tool_calls", "events")}}

    async def _follow(self, live: Follower, run_id: int, timeout: float) -> int:
        deltas = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            frame = await live.next(timeout=1.0)
            if frame.get("run") == run_id:
                if frame["type"] == "delta":
                    deltas += 1
                continue  # drain frames before looking at the database again
            status = await sync_to_async(
                lambda: Run.objects.values_list("status", flat=True).get(pk=run_id)
            )()
            if status in STOP_STATUSES:
                return deltas
        raise CommandError(f"run {run_id} did not finish within {timeout:.0f} s")

    def _print(self, result: dict[str, Any], as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(result, ensure_ascii=False, default=str))
            return
        for round_ in result["rounds"]:
            calls = [c for c in result["tool_calls"] if c["round_index"] == round_["index"]]
            names = ", ".join(f"{c['name']}[{c['status']}]" for c in calls) or "no tools"
            self.stdout.write(f"round {round_['index'] + 1}: finish={round_['finish_reason']} tools: {names}")
        self.stdout.write(f"status: {result['status']}")
        if result["error"]:
            self.stdout.write(f"error: {result['error_class']}: {result['error']}")
        self.stdout.write(result["text"] or "")
