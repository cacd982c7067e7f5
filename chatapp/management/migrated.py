"""Commands that read or write the app's tables say so clearly when the database was never set up.

On a checkout where ``make run`` has not run yet, the embedded database has no tables: a command
ended in a raw "no such table" traceback. The check costs nothing on the happy path: only when the
command fails on the database are the migrations looked at.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections


def unapplied_migrations(alias: str = DEFAULT_DB_ALIAS) -> int:
    """How many migrations this database still lacks (all of them on an empty one)."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections[alias])
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


class MigratedCommand(BaseCommand):
    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute(*args, **options)
        except DatabaseError:
            try:
                missing = unapplied_migrations()
            except DatabaseError:
                missing = 0  # the database itself is away: its own error says more
            if missing:
                name = connections[DEFAULT_DB_ALIAS].settings_dict.get("NAME")
                raise CommandError(
                    f"the database ({name}) is not set up yet: {missing} migrations are not applied. "
                    "Run `make run` once, or `.venv/bin/python manage.py migrate`, then try again."
                ) from None
            raise
