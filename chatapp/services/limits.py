"""Per-user limits on what one account can make the workers do (review M4, issue 16 item 6).

- ``MAX_RUNS_IN_FLIGHT_PER_USER`` runs queued or running at once (a run waiting for an approval
  holds no worker and does not count), so one user cannot take every worker slot;
- ``MAX_SENDS_PER_MINUTE_PER_USER`` runs started in any 60 s;
- the model a conversation may ask for: the provider's own model, or a name matching one of the
  provider's ``allowed_models`` patterns (set by an admin), so no one picks an arbitrary paid model.

The counts are read from the runs themselves inside the transaction that creates the next run,
with the user's row locked, so two parallel sends cannot both slip under a limit.
"""

from __future__ import annotations

import fnmatch
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from chatapp.bound_cursor import bound_cursor
from chatapp.models import Conversation, ProviderConfig, Quota, Run
from chatapp.services.errors import ChatError

IN_FLIGHT = (Run.Status.QUEUED, Run.Status.RUNNING)


class LimitReached(ChatError):
    """Refused because of a per-user limit; shown as it is (HTTP 429)."""


class ModelNotAllowed(ChatError):
    pass


def counted_runs(user_id: int, since: datetime) -> QuerySet[Run]:
    """The user's runs either limit can count: in flight (the status index) or sent since ``since``
    (the created_at index). Not the whole history: that was a scan of every run the user ever had on
    every send, 4.5 ms for 1,000 runs and growing with them (docs/performance.md, session 9)."""
    runs = Run.objects.filter(conversation__owner_id=user_id)
    return runs.filter(Q(status__in=IN_FLIGHT) | Q(created_at__gte=since))


def check_user_limits(user_id: int) -> None:
    """Call inside the transaction that creates the run."""
    # The user's row, locked first (sends of one user are checked one at a time), then counted in a
    # statement of its own: in READ COMMITTED a statement that waited for the lock reads with the
    # snapshot it took before waiting, and would miss the send it waited for.
    _lock_user(user_id)
    since = timezone.now() - timedelta(seconds=60)
    counts = _counts(user_id, since)
    in_flight = counts["flight"]
    limit = settings.MAX_RUNS_IN_FLIGHT_PER_USER
    if in_flight >= limit:
        raise LimitReached(
            _(
                "You already have %(n)s answers in progress; the limit is %(limit)s. "
                "Wait for one to finish (or stop one), then send again."
            )
            % {"n": in_flight, "limit": limit}
        )
    per_minute = settings.MAX_SENDS_PER_MINUTE_PER_USER
    if counts["minute"] >= per_minute:
        runs = counted_runs(user_id, since)
        recent = list(
            runs.filter(created_at__gte=since).order_by("created_at").values_list("created_at", flat=True)
        )
        wait = max(1, int((recent[-per_minute] - since).total_seconds()) + 1)
        raise LimitReached(
            _("You sent %(n)s messages in the last minute; the limit is %(limit)s. Try again in %(wait)s s.")
            % {"n": len(recent), "limit": per_minute, "wait": wait}
        )
    # What admins set per user and group (issue 13): tighter limits and the token/cost budgets.
    if counts["quotas"]:
        from chatapp.services.quotas import check_run_start

        check_run_start(get_user_model().objects.get(pk=user_id))


# Every send runs these two, and the ORM's building of them (a locked read of the whole user row, an
# aggregate with two filtered counts, an EXISTS) cost more than running them (docs/performance.md,
# session 15). The counts are the ORM's ``counted_runs`` query, the one its plan test pins.
def _lock_user(user_id: int) -> None:
    table = connection.ops.quote_name(get_user_model()._meta.db_table)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""  # SQLite: one writer anyway
    with bound_cursor(connection) as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s{lock}", [user_id])  # noqa: S608
        if cursor.fetchone() is None:
            raise get_user_model().DoesNotExist(f"no user {user_id}")


def _counts(user_id: int, since: datetime) -> dict[str, int]:
    """The user's runs in flight and sent since ``since``, and whether any quota is enabled."""
    with bound_cursor(connection) as cursor:
        cursor.execute(*counts_statement(user_id, since))
        flight, minute, quotas = cursor.fetchone()
    return {"flight": flight, "minute": minute, "quotas": bool(quotas)}


def counts_statement(user_id: int, since: datetime) -> tuple[str, list[Any]]:
    """``_counts``'s SQL and parameters (its plan test reads them)."""
    run, conversation = Run._meta.db_table, Conversation._meta.db_table
    statuses = ", ".join(["%s"] * len(IN_FLIGHT))
    sql = (
        f"SELECT COUNT(r.id) FILTER (WHERE r.status IN ({statuses})), "  # noqa: S608 - names are the models'
        "COUNT(r.id) FILTER (WHERE r.created_at >= %s), "
        f"EXISTS (SELECT 1 FROM {Quota._meta.db_table} WHERE enabled) "
        f"FROM {run} r INNER JOIN {conversation} c ON r.conversation_id = c.id "
        f"WHERE c.owner_id = %s AND (r.status IN ({statuses}) OR r.created_at >= %s)"
    )
    moment = connection.ops.adapt_datetimefield_value(since)
    return sql, [*IN_FLIGHT, moment, user_id, *IN_FLIGHT, moment]


def model_allowed(provider: ProviderConfig, model: str) -> bool:
    if not model or model == provider.model:
        return True
    patterns = [p.strip() for p in (provider.allowed_models or "").replace(",", "\n").splitlines()]
    return any(p and fnmatch.fnmatchcase(model, p) for p in patterns)


def check_model(provider: ProviderConfig, model: str) -> str:
    """The model to use; refuses a name the provider's admin did not allow."""
    if not model_allowed(provider, model):
        allowed = ", ".join([provider.model, *filter(None, (provider.allowed_models or "").split())])
        raise ModelNotAllowed(
            f"The model {model[:120]!r} is not offered by {provider}. Choose one of: {allowed}."
        )
    return model or provider.model
