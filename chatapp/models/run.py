"""Runs and their trace: rounds, tool calls, approvals and the per-run event log."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from agent.statuses import ACTIVE_RUN_STATUSES, TERMINAL_RUN_STATUSES
from chatapp.models.fields import LargeTextField, LargeValuesJSONField
from chatapp.status_words import word

# The engine's vocabulary (agent/statuses.py); the choices below hold exactly these values.
ACTIVE_STATUSES = ACTIVE_RUN_STATUSES
TERMINAL_STATUSES = TERMINAL_RUN_STATUSES


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        AWAITING_APPROVAL = "awaiting_approval", _("Awaiting approval")
        # An MCP server of the run needs its user (or an admin) to sign in (issue 13 item 4).
        AWAITING_SIGN_IN = "awaiting_sign_in", _("Awaiting sign-in")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")
        # Finished, but a tool call was denied: the answer was given without it (never "succeeded").
        DENIED = "denied", _("Denied")

    conversation = models.ForeignKey(
        "chatapp.Conversation", verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="runs"
    )
    user_message = models.ForeignKey(
        "chatapp.Message",
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user message"),
    )
    status = models.CharField(
        _("status"), max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    provider_name = models.CharField(_("provider name"), max_length=40)
    model = models.CharField(_("model"), max_length=120)
    error_class = models.CharField(_("error class"), max_length=80, blank=True)
    error = models.TextField(_("error"), blank=True)
    final_text = LargeTextField(_("final text"), blank=True)
    rounds_count = models.PositiveIntegerField(_("rounds count"), default=0)
    tool_calls_count = models.PositiveIntegerField(_("tool calls count"), default=0)
    prompt_tokens = models.PositiveIntegerField(_("prompt tokens"), default=0)
    completion_tokens = models.PositiveIntegerField(_("completion tokens"), default=0)
    deliveries = models.PositiveIntegerField(
        _("deliveries"), default=0, help_text=_("times a worker picked the run up")
    )
    lease_owner = models.CharField(_("lease owner"), max_length=120, blank=True)
    lease_expires_at = models.DateTimeField(_("lease expires at"), null=True, blank=True)
    cancel_requested = models.BooleanField(_("cancel requested"), default=False)
    last_seq = models.PositiveIntegerField(_("last seq"), default=0)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("run")
        verbose_name_plural = _("runs")
        constraints = [
            models.UniqueConstraint(
                fields=["conversation"],
                condition=Q(status__in=ACTIVE_STATUSES),
                name="one_active_run_per_conversation",
            )
        ]
        # The send's limits count a user's runs of the last minute (services/limits.py): through this
        # index, not by scanning the user's whole history on every send.
        indexes = [models.Index(fields=["created_at"], name="run_created_at")]

    # Not a column: how the enqueue after commit went (services/dispatch.py), for the view's notice.
    dispatch: Any = None
    # Not a column: the answers the worker's end stored in the transaction it records (worker/store.py),
    # which the audit record of that end pins as written instead of reading back (audit/log.py).
    answers_stored_now: list[str] | None = None

    def __str__(self) -> str:
        # Shown by the admin (titles, breadcrumbs, links) in the reader's language.
        return gettext("run %(n)s (%(state)s)") % {"n": self.pk, "state": word(self.status)}

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES


class Round(models.Model):
    run = models.ForeignKey(Run, verbose_name=_("run"), on_delete=models.CASCADE, related_name="rounds")
    index = models.PositiveIntegerField(_("index"))

    class Kind(models.TextChoices):
        # agent/events.py; the same words as chatapp/status_words.py.
        NORMAL = "normal", pgettext_lazy("round", "normal")
        CONTINUATION = "continuation", pgettext_lazy("round", "continuation")
        FINAL = "final", pgettext_lazy("round", "final answer")

    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices, default=Kind.NORMAL)
    provider_name = models.CharField(_("provider name"), max_length=40)
    model = models.CharField(_("model"), max_length=120)
    # Long strings (a large tool result in the history, a large argument) are stored once (blobs.py).
    request = LargeValuesJSONField(
        _("request"), default=dict, help_text=_("the request actually sent, secrets removed")
    )
    response = LargeValuesJSONField(_("response"), default=dict)
    finish_reason = models.CharField(_("finish reason"), max_length=20)
    # None (the provider sent no reason) differs from "" here, so null is meaningful.
    finish_reason_raw = models.CharField(_("finish reason raw"), max_length=60, blank=True, null=True)  # noqa: DJ001
    usage = models.JSONField(_("usage"), default=dict)
    ttft_ms = models.FloatField(_("ttft ms"), null=True)
    duration_ms = models.FloatField(_("duration ms"), null=True)
    compressions = models.JSONField(_("compressions"), default=list, blank=True)
    # From the provider's price table when the round was stored; null = unknown (cost_note says why).
    cost = models.DecimalField(_("cost"), max_digits=16, decimal_places=8, null=True, blank=True)
    cost_note = models.CharField(_("cost note"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["run", "index"]
        verbose_name = _("round")
        verbose_name_plural = _("rounds")
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="round_unique_index")]

    def __str__(self) -> str:
        return gettext("round %(n)s of run %(run)s") % {"n": self.index + 1, "run": self.run_id}


class ToolCall(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed", _("Proposed")
        INVALID = "invalid", _("Invalid")
        AWAITING_APPROVAL = "awaiting_approval", _("Awaiting approval")
        APPROVED = "approved", _("Approved")
        DENIED = "denied", _("Denied")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        UNKNOWN = "unknown", _("Unknown")

    run = models.ForeignKey(Run, verbose_name=_("run"), on_delete=models.CASCADE, related_name="tool_calls")
    round_index = models.PositiveIntegerField(_("round index"))
    index = models.PositiveIntegerField(_("index"))
    call_id = models.CharField(_("call id"), max_length=120)
    name = models.CharField(_("name"), max_length=200)
    server = models.CharField(_("server"), max_length=40, blank=True)
    arguments = LargeTextField(_("arguments"), blank=True)
    status = models.CharField(
        _("status"), max_length=20, choices=Status.choices, default=Status.PROPOSED, db_index=True
    )
    risk = models.CharField(_("risk"), max_length=10, blank=True)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    result = LargeTextField(_("result"), blank=True)
    is_error = models.BooleanField(_("is error"), default=False)
    error_code = models.CharField(_("error code"), max_length=40, blank=True)
    truncated = models.BooleanField(_("truncated"), default=False)
    definition_hash = models.CharField(_("definition hash"), max_length=80, blank=True)
    definition = models.JSONField(_("definition"), default=dict, blank=True)
    duration_ms = models.FloatField(_("duration ms"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["run", "round_index", "index"]
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")
        constraints = [
            models.UniqueConstraint(fields=["run", "round_index", "index"], name="toolcall_unique_position")
        ]
        permissions = [("approve_toolcall", "Can approve or deny tool calls")]

    def __str__(self) -> str:
        return f"{self.name} ({word(self.status)})"


class Approval(models.Model):
    class Decision(models.TextChoices):
        APPROVED = "approved", _("Approved")
        DENIED = "denied", _("Denied")

    tool_call = models.OneToOneField(
        ToolCall, verbose_name=_("tool call"), on_delete=models.CASCADE, related_name="approval"
    )
    decision = models.CharField(_("decision"), max_length=10, choices=Decision.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("decided by"), on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField(_("reason"), blank=True)
    definition_hash = models.CharField(_("definition hash"), max_length=80, blank=True)
    decided_at = models.DateTimeField(_("decided at"), auto_now_add=True)

    class Meta:
        verbose_name = _("approval")
        verbose_name_plural = _("approvals")

    def __str__(self) -> str:
        return gettext("%(decision)s by %(who)s") % {"decision": word(self.decision), "who": self.decided_by}


class RunEvent(models.Model):
    """The per-run event log: replayed to reconnecting clients, and folded to rebuild a run's state."""

    run = models.ForeignKey(Run, verbose_name=_("run"), on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField(_("seq"))
    type = models.CharField(_("type"), max_length=40)
    payload = LargeValuesJSONField(_("payload"), default=dict)
    durable = models.BooleanField(_("durable"), default=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        verbose_name = _("run event")
        verbose_name_plural = _("run events")
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq}"
