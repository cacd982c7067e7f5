"""The tamper-evident audit log: an append-only hash chain of who did what to which run.

Rows are written only by ``chatapp.audit.record`` and never changed: each holds the hash of the row
before it, and its own hash covers its canonical JSON (see ``chatapp.audit.chain``). On PostgreSQL a
trigger refuses UPDATE and DELETE; ``manage.py verify_audit`` finds an edit made around it.
"""

from __future__ import annotations

from django.db import models


class AuditEvent(models.Model):
    class Kind(models.TextChoices):
        RUN_CREATED = "run_created"
        ROUND_STORED = "round_stored"
        TOOL_CALL_STATUS = "tool_call_status"
        APPROVAL = "approval"
        RUN_FINISHED = "run_finished"
        EXPORT = "export"
        FILE_UPLOADED = "file_uploaded"
        FILE_DELETED = "file_deleted"
        CONVERSATION_DELETED = "conversation_deleted"
        CONVERSATION_RESTORED = "conversation_restored"
        SHARE_CREATED = "share_created"
        SHARE_REVOKED = "share_revoked"

    # Gap-free from 1: a missing number is a deleted row.
    seq = models.PositiveBigIntegerField(unique=True)
    kind = models.CharField(max_length=30, choices=Kind.choices)
    actor = models.CharField(max_length=150, help_text='a username, or "system"')
    # A plain number, not a foreign key: deleting a conversation must not delete (or be blocked by)
    # its audit trail.
    run_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    payload = models.JSONField(default=dict)
    # Set by the writer before hashing (not auto_now_add): the hash covers it.
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"#{self.seq} {self.kind} by {self.actor}"
