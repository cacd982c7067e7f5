"""Runs and their trace: rounds, tool calls, approvals and the per-run event log."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from agent.statuses import ACTIVE_RUN_STATUSES, TERMINAL_RUN_STATUSES
from chatapp.models.fields import LargeTextField, LargeValuesJSONField

# The engine's vocabulary (agent/statuses.py); the choices below hold exactly these values.
ACTIVE_STATUSES = ACTIVE_RUN_STATUSES
TERMINAL_STATUSES = TERMINAL_RUN_STATUSES


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        AWAITING_APPROVAL = "awaiting_approval"
        # An MCP server of the run needs its user (or an admin) to sign in (issue 13 item 4).
        AWAITING_SIGN_IN = "awaiting_sign_in"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        # Finished, but a tool call was denied: the answer was given without it (never "succeeded").
        DENIED = "denied"

    conversation = models.ForeignKey("chatapp.Conversation", on_delete=models.CASCADE, related_name="runs")
    user_message = models.ForeignKey(
        "chatapp.Message", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    provider_name = models.CharField(max_length=40)
    model = models.CharField(max_length=120)
    error_class = models.CharField(max_length=80, blank=True)
    error = models.TextField(blank=True)
    final_text = LargeTextField(blank=True)
    rounds_count = models.PositiveIntegerField(default=0)
    tool_calls_count = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    deliveries = models.PositiveIntegerField(default=0, help_text="times a worker picked the run up")
    lease_owner = models.CharField(max_length=120, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    last_seq = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation"],
                condition=Q(status__in=ACTIVE_STATUSES),
                name="one_active_run_per_conversation",
            )
        ]

    # Not a column: how the enqueue after commit went (services/dispatch.py), for the view's notice.
    dispatch: Any = None

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES


class Round(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rounds")
    index = models.PositiveIntegerField()
    kind = models.CharField(max_length=20, default="normal")
    provider_name = models.CharField(max_length=40)
    model = models.CharField(max_length=120)
    # Long strings (a large tool result in the history, a large argument) are stored once (blobs.py).
    request = LargeValuesJSONField(default=dict, help_text="the request actually sent, secrets removed")
    response = LargeValuesJSONField(default=dict)
    finish_reason = models.CharField(max_length=20)
    # None (the provider sent no reason) differs from "" here, so null is meaningful.
    finish_reason_raw = models.CharField(max_length=60, blank=True, null=True)  # noqa: DJ001
    usage = models.JSONField(default=dict)
    ttft_ms = models.FloatField(null=True)
    duration_ms = models.FloatField(null=True)
    compressions = models.JSONField(default=list, blank=True)
    # From the provider's price table when the round was stored; null = unknown (cost_note says why).
    cost = models.DecimalField(max_digits=16, decimal_places=8, null=True, blank=True)
    cost_note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="round_unique_index")]

    def __str__(self) -> str:
        return f"round {self.index + 1} of run {self.run_id}"


class ToolCall(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed"
        INVALID = "invalid"
        AWAITING_APPROVAL = "awaiting_approval"
        APPROVED = "approved"
        DENIED = "denied"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        UNKNOWN = "unknown"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    round_index = models.PositiveIntegerField()
    index = models.PositiveIntegerField()
    call_id = models.CharField(max_length=120)
    name = models.CharField(max_length=200)
    server = models.CharField(max_length=40, blank=True)
    arguments = LargeTextField(blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PROPOSED, db_index=True)
    risk = models.CharField(max_length=10, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    result = LargeTextField(blank=True)
    is_error = models.BooleanField(default=False)
    error_code = models.CharField(max_length=40, blank=True)
    truncated = models.BooleanField(default=False)
    definition_hash = models.CharField(max_length=80, blank=True)
    definition = models.JSONField(default=dict, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "round_index", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "round_index", "index"], name="toolcall_unique_position")
        ]
        permissions = [("approve_toolcall", "Can approve or deny tool calls")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class Approval(models.Model):
    class Decision(models.TextChoices):
        APPROVED = "approved"
        DENIED = "denied"

    tool_call = models.OneToOneField(ToolCall, on_delete=models.CASCADE, related_name="approval")
    decision = models.CharField(max_length=10, choices=Decision.choices)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField(blank=True)
    definition_hash = models.CharField(max_length=80, blank=True)
    decided_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.decision} by {self.decided_by_id}"


class RunEvent(models.Model):
    """The per-run event log: replayed to reconnecting clients, and folded to rebuild a run's state."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    payload = LargeValuesJSONField(default=dict)
    durable = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq}"
