"""Starting and stopping runs: the one path shared by the browser, the API and ``manage.py chat``."""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from chatapp.audit import record
from chatapp.models import ACTIVE_STATUSES, Conversation, Message, ProviderConfig, Run, Upload
from chatapp.redaction import redact_text
from chatapp.row_insert import insert_row
from chatapp.row_update import update_columns
from chatapp.services import branches
from chatapp.services.dispatch import enqueue_on_commit
from chatapp.services.errors import MessageRejected, ProviderUnavailable, RunAlreadyActive
from chatapp.services.images import image_parts
from chatapp.services.limits import check_model, check_user_limits
from chatapp.services.providers import default_provider
from chatapp.services.run_lifecycle import move_locked
from chatapp.stop_signal import announce


def check_message(text: str) -> str:
    if not text or not text.strip():
        raise MessageRejected(_("The message is empty. Type something to send."))
    if "\x00" in text:
        # PostgreSQL cannot store it, and no text a person types contains it (review L6).
        raise MessageRejected(
            _(
                "The message contains a NUL character (U+0000), which cannot be stored. "
                "Remove it and send again."
            )
        )
    size = len(text.encode("utf-8", "replace"))
    if size > settings.MAX_MESSAGE_BYTES:
        raise MessageRejected(
            _(
                "The message is %(size)s bytes; the limit is %(limit)s bytes. "
                "Attach long text as a file in the workspace instead."
            )
            % {"size": f"{size:,}", "limit": f"{settings.MAX_MESSAGE_BYTES:,}"}
        )
    return text


def provider_for(conversation: Conversation) -> ProviderConfig:
    provider = conversation.provider
    if provider is not None:
        if provider.enabled:
            return provider
        # Never a silent switch to another model: the person chose this one.
        raise ProviderUnavailable(
            _(
                "The model chosen for this conversation (%(name)s) has been disabled by an admin. Choose "
                "another model in the menu above and send again."
            )
            % {"name": provider.label or provider.name}
        )
    return default_provider()


def attachment_note(uploads: list[Upload]) -> str:
    """How attached files are named to the model: by their workspace path, for the file tools."""
    listed = ", ".join(f"{u.name} ({u.size:,} bytes)" for u in uploads)
    return (
        f"\n\n[The user attached {len(uploads)} file{'s' if len(uploads) != 1 else ''} to this message; "
        f"they are in the workspace, readable with the file tools: {listed}]"
    )


def _pending_uploads(conversation: Conversation, ids: list[int]) -> list[Upload]:
    if not ids:
        return []
    rows = list(
        Upload.objects.select_for_update()
        .filter(conversation=conversation, pk__in=ids, message__isnull=True, deleted_at__isnull=True)
        .order_by("id")
    )
    if len(rows) != len(set(ids)):
        raise MessageRejected(
            _(
                "An attached file is no longer available (deleted, or attached to another message). "
                "Remove it from the message and send again."
            )
        )
    return rows


def start_run(
    conversation: Conversation,
    text: str,
    attachments: list[int] | None = None,
    *,
    edit_of: Message | None = None,
) -> Run:
    """Store the user's message and a queued run; enqueue the worker once the rows are committed.

    The message follows the leaf of the branch on screen; an edit (``edit_of``) becomes a sibling of
    the message it edits instead (same parent), which starts a new branch (services/branches.py).
    """
    check_message(text)
    # A known secret pasted into the chat is stored (and sent) as [REDACTED], like everywhere else.
    text = redact_text(text)
    provider = provider_for(conversation)
    model = check_model(provider, conversation.model_override)
    try:
        with transaction.atomic():
            check_user_limits(conversation.owner_id)
            uploads = _pending_uploads(conversation, attachments or [])
            kept: list = []
            if edit_of is not None:
                # The edited question keeps the files the original had attached (still in the workspace).
                kept = [u for u in edit_of.attached() if u.deleted_at is None]
                uploads += kept
            model_text = text + attachment_note(uploads) if uploads else text
            payload: dict = {"role": "user", "content": model_text}
            if kept:
                payload["attachment_ids"] = [u.pk for u in kept]  # shown on the edit (Message.attached)
            media = image_parts(conversation, uploads, provider, model)
            if media:
                payload["media"] = [m.to_dict() for m in media]
            message = Message(
                conversation=conversation,
                role=Message.Role.USER,
                content=text,
                payload=payload,
                parent_run_id=edit_of.parent_run_id
                if edit_of is not None
                else branches.leaf_id(conversation),
            )
            insert_row(message)
            if uploads and edit_of is None:
                Upload.objects.filter(pk__in=[u.pk for u in uploads]).update(message=message)
            run = _queue_run(conversation, message, provider, model)
            message.run = run
            update_columns(message, ["run"])
            if conversation.title == "New conversation":
                conversation.title = text.strip().splitlines()[0][:60] or conversation.title
            update_columns(conversation, ["title", "updated_at", "active_run"])
            # Last: the audit chain's lock is held from here until the commit, and every send of
            # every user waits for it, so nothing else may run while it is held.
            record("run_created", run_id=run.pk, actor=conversation.owner.get_username(), subject=run)
    except IntegrityError as exc:
        raise RunAlreadyActive(
            _("The assistant is still answering in this conversation. Wait for it or stop it first.")
        ) from exc
    return run


def regenerate_run(run: Run) -> Run:
    """A new answer to the same question, a sibling of ``run`` (shown in its place as ‹ 2/2 ›)."""
    conversation = run.conversation
    if run.user_message is None:
        raise MessageRejected(_("This answer has no stored question to answer again."))
    provider = provider_for(conversation)
    model = check_model(provider, conversation.model_override)
    try:
        with transaction.atomic():
            check_user_limits(conversation.owner_id)
            new = _queue_run(conversation, run.user_message, provider, model)
            conversation.save(update_fields=["updated_at", "active_run"])
            record("run_created", run_id=new.pk, actor=conversation.owner.get_username(), subject=new)
    except IntegrityError as exc:
        raise RunAlreadyActive(
            _("The assistant is still answering in this conversation. Wait for it or stop it first.")
        ) from exc
    return new


def _queue_run(conversation: Conversation, message: Message, provider: ProviderConfig, model: str) -> Run:
    run = Run(conversation=conversation, user_message=message, provider_name=provider.name, model=model)
    insert_row(run)
    conversation.active_run = run
    # The caller appends the audit event last in its transaction (the chain's lock is held from
    # there until the commit).
    run.dispatch = enqueue_on_commit(run.pk)
    return run


def request_cancel(run: Run) -> None:
    if Run.objects.filter(pk=run.pk, status__in=ACTIVE_STATUSES).update(cancel_requested=True):
        # The worker driving it hears it at once (chatapp/worker/cancels.py).
        transaction.on_commit(lambda: announce(run.pk))
    # A run that no worker holds (queued, or waiting for an approval or a sign-in) would never notice
    # the cancel: stop it here; the move's status frame tells every open page.
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(pk=run.pk).first()
        parked = (Run.Status.QUEUED, Run.Status.AWAITING_APPROVAL, Run.Status.AWAITING_SIGN_IN)
        if locked and locked.status in parked and not locked.lease_owner:
            move_locked(locked, Run.Status.CANCELLED, error="Stopped by the user.")
    run.refresh_from_db()
