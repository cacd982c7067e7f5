"""Run the whole local topology in the foreground; Ctrl-C stops every child (what `make run` calls)."""

from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from chatapp.devstack import Stack, StackError, Supervisor


class Command(BaseCommand):
    help = "Start Redis (if embedded), daphne and a Celery worker; stop them all on Ctrl-C or SIGTERM."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument(
            "--concurrency",
            type=int,
            default=settings.WORKER_RUNS,
            help="runs each worker process carries at once (CLEARLOOP_WORKER_RUNS)",
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=settings.WORKER_THREADS,
            help="Celery threads per worker: they admit runs, no run holds one (CLEARLOOP_WORKER_THREADS)",
        )
        parser.add_argument("--workers", type=int, default=1, help="worker processes")

    def handle(self, *args, **options) -> None:
        stopping = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda *_: stopping.set())
        stack = Stack(
            port=options["port"],
            worker_concurrency=options["threads"],
            worker_runs=options["concurrency"],
            workers=options["workers"],
        )
        self.stdout.write("Starting Redis, daphne and the Celery worker…")
        try:
            stack.start()
        except StackError as error:  # e.g. the port is taken (another `make run`?): said, not a traceback
            raise CommandError(str(error)) from error
        try:
            mode = "embedded Redis" if settings.EMBEDDED_REDIS else "Redis at REDIS_URL"
            db = "PostgreSQL" if settings.USES_POSTGRES else "SQLite"
            self.stdout.write(self.style.SUCCESS(f"clearloop is up: http://127.0.0.1:{options['port']}/"))
            self.stdout.write(f"  {db}, {mode}; logs in {stack.log_dir}")
            if settings.DEBUG:
                self.stdout.write("  logins: demo/demo (chat), admin/admin (admin), auditor/auditor (traces)")
            self.stdout.write("  Ctrl-C stops everything.")
            # A child that dies (the worker, daphne, the demo MCP server, the embedded Redis) is started
            # again; runs it was driving are resumed by the workers' sweep (docs/durable-runs.md).
            supervisor = Supervisor(stack, say=lambda line: self.stderr.write(line))
            while not stopping.wait(0.5):
                try:
                    supervisor.check()
                except StackError as error:
                    self.stderr.write(f"{error} Stopping.")
                    break
        finally:
            self.stdout.write("Stopping…")
            stack.stop()
