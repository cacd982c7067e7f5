"""The conversation list: a conversation appears with its first message, and deleting it is undoable.

"New conversation" hands out the user's one draft (a conversation with no message yet) instead of
adding a row each click; drafts are not listed, so the list holds only conversations that were
started. Deleting is a soft delete (``deleted_at``): the owner no longer sees it, may undo it for
``UNDO_DELETE_SECONDS``, and auditors keep every run of it. Both are recorded in the audit log.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from chatapp.audit import record
from chatapp.bound_cursor import bound_cursor
from chatapp.models import ACTIVE_STATUSES, Conversation, Message, Upload
from chatapp.services.errors import ChatError


class RestoreRefused(ChatError):
    pass


def listed(user: Any) -> QuerySet[Conversation]:
    """The owner's conversations that were started (a message or a file) and not deleted."""
    return Conversation.objects.filter(owner=user, deleted_at__isnull=True).filter(
        Q(_has_message()) | Q(_has_upload())
    )


def is_started(convo: Conversation) -> bool:
    """``convo`` has a message: it is no longer a draft."""
    return Message.objects.filter(conversation=convo).exists()


def is_on_top(user: Any, convo: Conversation) -> bool:
    """``convo`` is first in the owner's list. Only the conversations updated since it are candidates
    (the owner's recent-first index): the question does not read the user's whole list, which it did
    on every send (docs/performance.md, session 9). Asked on every send: on PostgreSQL with the ORM's
    statement written out (building and compiling it was ~2 ms of the send's CPU, session 16;
    ``tests/web/test_send_statements.py`` checks both answer alike)."""
    if connection.vendor != "postgresql":
        return leading_since(user, convo).first() == convo.pk
    with bound_cursor(connection) as cursor:
        cursor.execute(_FIRST_SINCE, [user.pk, convo.updated_at])
        row = cursor.fetchone()
    return row is not None and row[0] == convo.pk


# ``leading_since(...).first()``: ``listed`` (started, not deleted) and updated since, newest first.
_FIRST_SINCE = (
    f"SELECT c.id FROM {Conversation._meta.db_table} c WHERE c.deleted_at IS NULL AND c.owner_id = %s"  # noqa: S608
    f" AND (EXISTS(SELECT 1 FROM {Message._meta.db_table} m WHERE m.conversation_id = c.id)"
    f" OR EXISTS(SELECT 1 FROM {Upload._meta.db_table} u WHERE u.conversation_id = c.id))"
    " AND c.updated_at >= %s ORDER BY c.updated_at DESC LIMIT 1"
)


def leading_since(user: Any, convo: Conversation) -> QuerySet[Conversation, int]:
    """The ids of the owner's listed conversations updated since ``convo``, newest first."""
    return listed(user).filter(updated_at__gte=convo.updated_at).values_list("pk", flat=True)


def draft_for(user: Any) -> Conversation:
    """The user's empty conversation, made once and handed out until it gets its first message."""
    with transaction.atomic():
        draft = (
            Conversation.objects.select_for_update()
            .filter(owner=user, draft=True, deleted_at__isnull=True)
            .exclude(_has_message())
            .exclude(_has_upload())
            .order_by("-id")
            .first()
        )
        return draft or Conversation.objects.create(owner=user, draft=True)


def without_drafts(conversations: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """``conversations`` less the web's drafts still waiting for their first message or file."""
    return conversations.exclude(Q(draft=True) & ~_has_message() & ~_has_upload())


def _has_message() -> Exists:
    return Exists(Message.objects.filter(conversation=OuterRef("pk")))


def _has_upload() -> Exists:
    return Exists(Upload.objects.filter(conversation=OuterRef("pk")))


def delete(convo: Conversation, actor: Any) -> None:
    from chatapp.services.runs import request_cancel

    for run in convo.runs.filter(status__in=ACTIVE_STATUSES):
        request_cancel(run)
    with transaction.atomic():
        Conversation.objects.filter(pk=convo.pk).update(deleted_at=timezone.now())
        record(
            "conversation_deleted",
            actor=actor.get_username(),
            payload={"conversation_id": convo.pk, "title": convo.title},
        )


def restore(user: Any, conversation_id: int) -> Conversation:
    window = timezone.now() - timedelta(seconds=settings.UNDO_DELETE_SECONDS)
    with transaction.atomic():
        convo = (
            Conversation.objects.select_for_update()
            .filter(pk=conversation_id, owner=user, deleted_at__isnull=False)
            .first()
        )
        if convo is None:
            raise RestoreRefused(_("There is no deleted conversation to bring back."))
        if convo.deleted_at is None or convo.deleted_at < window:
            raise RestoreRefused(_("It is too late to undo this delete."))
        convo.deleted_at = None
        convo.save(update_fields=["deleted_at"])
        record(
            "conversation_restored",
            actor=user.get_username(),
            payload={"conversation_id": convo.pk, "title": convo.title},
        )
    return convo
