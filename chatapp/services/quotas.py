"""Quotas and budgets (issue 13 item 3): what a person may still use, checked before a run starts
(inside the transaction that creates it, after the per-user limits of ``limits.py``) and between
rounds by the worker (a run that crosses a budget finishes its round, then stops with the reason).

Usage is read from the stored rounds: tokens are the prompt + completion tokens each round reported,
cost is the round's price-table cost (``Round.cost``; a round without a price counts no cost, and the
admin refuses a cost budget while no price exists). Days and months are those of ``TIME_ZONE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import BigIntegerField, Count, Q, Sum, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from chatapp.bound_cursor import bound_cursor
from chatapp.models import Quota, Round, Run
from chatapp.models.quotas import BUDGETS
from chatapp.services.limits import LimitReached

IN_FLIGHT = (Run.Status.QUEUED, Run.Status.RUNNING)


class BudgetExceeded(LimitReached):
    """A token or cost budget is used up; shown as it is (HTTP 429)."""


@dataclass(frozen=True)
class Used:
    tokens: int = 0
    cost: Decimal = Decimal(0)


@dataclass(frozen=True)
class BudgetState:
    quota: Quota
    field: str
    limit: Decimal | int
    used: Decimal | int

    @property
    def what(self) -> str:
        return BUDGETS[self.field][0]

    @property
    def period(self) -> str:
        return BUDGETS[self.field][1]

    @property
    def fraction(self) -> float:
        return float(self.used) / float(self.limit) if self.limit else 1.0

    @property
    def reached(self) -> bool:
        return self.used >= self.limit

    def amount(self, value: Decimal | int) -> str:
        if self.what == "tokens":
            return _("%(n)s tokens") % {"n": f"{int(value):,}"}
        from chatapp.costs import money

        return money(Decimal(value))

    @property
    def whose(self) -> str:
        if self.quota.user_id:
            return _("your quota")
        name = _group_name(self.quota)
        if self.quota.shared:
            return _("the quota of group %(group)s (together)") % {"group": name}
        return _("the quota of group %(group)s (each member)") % {"group": name}

    def exceeded_message(self) -> str:
        # Whole sentences per period and kind: a translation needs the sentence, not its pieces.
        template = {
            ("day", "tokens"): _(
                "The daily token budget is used up: %(used)s today, the limit is %(limit)s (%(whose)s). "
                "It resets at midnight (%(tz)s)."
            ),
            ("month", "tokens"): _(
                "The monthly token budget is used up: %(used)s this month, the limit is %(limit)s "
                "(%(whose)s). It resets on the first of next month (%(tz)s)."
            ),
            ("day", "cost"): _(
                "The daily cost budget is used up: %(used)s today, the limit is %(limit)s (%(whose)s). "
                "It resets at midnight (%(tz)s)."
            ),
            ("month", "cost"): _(
                "The monthly cost budget is used up: %(used)s this month, the limit is %(limit)s "
                "(%(whose)s). It resets on the first of next month (%(tz)s)."
            ),
        }[("day" if self.period == "day" else "month", "tokens" if self.what == "tokens" else "cost")]
        return template % {
            "used": self.amount(self.used),
            "limit": self.amount(self.limit),
            "whose": self.whose,
            "tz": timezone.get_current_timezone_name(),
        }

    def shown(self) -> str:
        template = {
            ("day", "tokens"): _("%(pct)s %% of today's token budget used (%(used)s of %(limit)s)"),
            ("month", "tokens"): _("%(pct)s %% of this month's token budget used (%(used)s of %(limit)s)"),
            ("day", "cost"): _("%(pct)s %% of today's cost budget used (%(used)s of %(limit)s)"),
            ("month", "cost"): _("%(pct)s %% of this month's cost budget used (%(used)s of %(limit)s)"),
        }[("day" if self.period == "day" else "month", "tokens" if self.what == "tokens" else "cost")]
        return template % {
            "pct": min(999, int(self.fraction * 100)),
            "used": self.amount(self.used),
            "limit": self.amount(self.limit),
        }


# --- settings an admin may not save ---------------------------------------------------------


# --- usage ------------------------------------------------------------------------------------


def period_starts(now: datetime | None = None) -> dict[str, datetime]:
    local = timezone.localtime(now)
    day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return {"day": day, "month": day.replace(day=1)}


def _round_tokens() -> Any:
    def part(key: str) -> Any:
        return Coalesce(Cast(KT(f"usage__{key}"), BigIntegerField()), Value(0))

    return Sum(part("prompt_tokens") + part("completion_tokens"))


def used_by(user_ids: list[int], since: datetime) -> Used:
    row = Round.objects.filter(run__conversation__owner_id__in=user_ids, created_at__gte=since).aggregate(
        tokens=_round_tokens(), cost=Sum("cost")
    )
    return Used(int(row["tokens"] or 0), row["cost"] or Decimal(0))


def any_enabled() -> bool:
    """Whether any quota is on: asked on every send and between a run's rounds. One statement written
    out (the ORM's ``exists()`` took ~0.4 ms of CPU to build, about four times the statement's own
    cost); ``tests/web/test_quota_exists.py`` checks it against the ORM's answer."""
    with bound_cursor(connection) as cursor:
        cursor.execute(_ANY_ENABLED, [True])
        return cursor.fetchone() is not None


_ANY_ENABLED = f"SELECT 1 FROM {Quota._meta.db_table} WHERE enabled = %s LIMIT 1"  # noqa: S608 - the model's table


def applicable(user: Any) -> list[Quota]:
    # Asked on every send and between a run's rounds, and most deployments set no quota: a plain
    # EXISTS first (0.4 ms of Python to build and run) instead of the OR over the user's groups
    # (1.6 ms), docs/performance.md.
    if not any_enabled():
        return []
    return list(
        Quota.objects.filter(Q(user=user) | Q(group__in=user.groups.all()), enabled=True)
        .select_related("group")
        .order_by("id")
    )


def counted_users(quota: Quota, user: Any) -> list[int]:
    if quota.group is not None and quota.shared:
        return list(quota.group.user_set.values_list("pk", flat=True))
    return [user.pk]


def budget_states(user: Any, quotas: list[Quota] | None = None) -> list[BudgetState]:
    starts = period_starts()
    states = []
    cache: dict[tuple[tuple[int, ...], str], Used] = {}
    for quota in applicable(user) if quotas is None else quotas:
        ids = tuple(counted_users(quota, user))
        for field, (what, period) in BUDGETS.items():
            limit = getattr(quota, field)
            if limit is None:
                continue
            key = (ids, period)
            if key not in cache:
                cache[key] = used_by(list(ids), starts[period])
            states.append(BudgetState(quota, field, limit, getattr(cache[key], what)))
    return states


def check_budgets(user: Any, quotas: list[Quota] | None = None) -> None:
    for state in budget_states(user, quotas):
        if state.reached:
            raise BudgetExceeded(state.exceeded_message())


def check_run_start(user: Any) -> None:
    """Call inside the transaction that creates the run (after ``limits.check_user_limits`` locked
    the user's row; ``user``: that row, or its id): the quotas' concurrency and message-rate limits,
    then the budgets."""
    if isinstance(user, int):
        user = get_user_model().objects.get(pk=user)
    quotas = applicable(user)
    since = timezone.now() - timedelta(seconds=60)
    for quota in quotas:
        runs = Run.objects.filter(conversation__owner_id__in=counted_users(quota, user))
        counts = runs.aggregate(
            flight=Count("pk", filter=Q(status__in=IN_FLIGHT)),
            minute=Count("pk", filter=Q(created_at__gte=since)),
        )
        whose = "your quota" if quota.user_id else f"the quota of group {_group_name(quota)}"
        if quota.max_concurrent_runs is not None and counts["flight"] >= quota.max_concurrent_runs:
            raise LimitReached(
                f"{counts['flight']} answers are in progress; {whose} allows {quota.max_concurrent_runs} "
                "at once. Wait for one to finish (or stop one), then send again."
            )
        if quota.messages_per_minute is not None and counts["minute"] >= quota.messages_per_minute:
            raise LimitReached(
                f"{counts['minute']} messages in the last minute; {whose} allows "
                f"{quota.messages_per_minute}. Try again in a minute."
            )
    check_budgets(user, quotas)


def stop_reason(run_id: int) -> str | None:
    """For the worker between rounds: why this run must stop now, or None."""
    if not any_enabled():
        return None  # most deployments set no quota: one EXISTS, not the run, its chat and its owner
    run = Run.objects.select_related("conversation__owner").filter(pk=run_id).first()
    if run is None:
        return None
    try:
        check_budgets(run.conversation.owner)
    except BudgetExceeded as exc:
        return str(exc)
    return None


def shown_to_user(user: Any) -> list[str]:
    """The line(s) under the message box: the most used budget per period and kind."""
    best: dict[tuple[str, str], BudgetState] = {}
    for state in budget_states(user):
        key = (state.what, state.period)
        if key not in best or state.fraction > best[key].fraction:
            best[key] = state
    return [s.shown() for s in sorted(best.values(), key=lambda s: -s.fraction)]


# --- the admins' usage report -----------------------------------------------------------------


@dataclass(frozen=True)
class UsageRow:
    kind: str  # "user" or "group"
    name: str
    members: int
    tokens_today: int
    tokens_month: int
    cost_today: Decimal
    cost_month: Decimal
    unpriced_rounds_month: int
    limits: str

    CSV_HEADER = (
        "kind",
        "name",
        "members",
        "tokens_today",
        "tokens_month",
        "cost_today",
        "cost_month",
        "unpriced_rounds_month",
        "limits",
    )

    def csv(self) -> list[str]:
        return [str(getattr(self, f)) for f in self.CSV_HEADER]


def _per_user(since: datetime) -> dict[int, dict[str, Any]]:
    rows = (
        Round.objects.filter(created_at__gte=since)
        .order_by()
        .values("run__conversation__owner_id")
        # Not named "cost": the filter below would then read the annotation, not the field.
        .annotate(
            tokens=_round_tokens(), spent=Sum("cost"), unpriced=Count("pk", filter=Q(cost__isnull=True))
        )
    )
    return {r["run__conversation__owner_id"]: {**r, "cost": r["spent"]} for r in rows}


def _limits_text(quota: Quota | None) -> str:
    if quota is None:
        return ""
    parts = [f"{f}={getattr(quota, f)}" for f in (*BUDGETS, "max_concurrent_runs", "messages_per_minute")]
    return "; ".join(p for p in parts if not p.endswith("=None")) + ("" if quota.enabled else " (disabled)")


def usage_report() -> list[UsageRow]:
    from django.contrib.auth.models import Group

    starts = period_starts()
    today, month = _per_user(starts["day"]), _per_user(starts["month"])
    quotas_by_user = {q.user_id: q for q in Quota.objects.filter(user__isnull=False)}
    quotas_by_group = {q.group_id: q for q in Quota.objects.filter(group__isnull=False)}

    def row(kind: str, name: str, ids: list[int], quota: Quota | None) -> UsageRow:
        def total(table: dict[int, dict[str, Any]], key: str) -> Any:
            return sum((table.get(i, {}).get(key) or 0 for i in ids), Decimal(0) if key == "cost" else 0)

        return UsageRow(
            kind,
            name,
            len(ids),
            total(today, "tokens"),
            total(month, "tokens"),
            total(today, "cost"),
            total(month, "cost"),
            total(month, "unpriced"),
            _limits_text(quota),
        )

    users = get_user_model().objects.order_by("username")
    rows = [row("user", u.get_username(), [u.pk], quotas_by_user.get(u.pk)) for u in users]
    for group in Group.objects.order_by("name").prefetch_related("user_set"):
        ids = [u.pk for u in group.user_set.all()]
        rows.append(row("group", group.name, ids, quotas_by_group.get(group.pk)))
    return rows


def _group_name(quota: Quota) -> str:
    return quota.group.name if quota.group is not None else "?"
