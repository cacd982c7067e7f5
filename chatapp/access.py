"""Who may see what. Every view, API endpoint and consumer asks here (404 for everyone else)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404

AUDITORS = "auditors"


def is_auditor(user: Any) -> bool:
    # Asked several times per request (refusing writes, then rendering the page): one query per
    # request's user object, whose groups do not change while it is served.
    known = getattr(user, "_clearloop_is_auditor", None)
    if known is None:
        known = bool(user.is_authenticated and user.groups.filter(name=AUDITORS).exists())
        _remember_auditor(user, known)
    return known


def _remember_auditor(user: Any, known: bool) -> None:
    try:
        user._clearloop_is_auditor = known
    except AttributeError:  # an object that takes no attributes: ask each time
        pass


# Reading another user's conversation takes an explicit grant: the auditors' group, a superuser, or
# this permission (the admin's "view conversation"). ``is_staff`` alone only means "may log into the
# admin" and grants nothing here (issue 16, M1).
VIEW_ANY_CONVERSATION = "chatapp.view_conversation"


def can_view_conversation(user: Any, conversation: Any) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if conversation.owner_id == user.pk or user.is_superuser or is_auditor(user):
        return True
    return bool(user.has_perm(VIEW_ANY_CONVERSATION))


def refuse_auditors(user: Any) -> None:
    """Auditors review; they change nothing anywhere, not even in a conversation of their own."""
    if is_auditor(user) and not user.is_superuser:
        raise PermissionDenied("Auditors have read-only access.")


def owned_conversation_or_404(user: Any, conversation_id: int, *, related: tuple[str, ...] = ()) -> Any:
    """Only the owner may write to a conversation; auditors and admins may not chat in it.

    Whether the user audits is asked in the conversation's read (one statement, not two, on every
    write: docs/performance.md, session 15); only when there is no such conversation is it asked on
    its own, so an auditor is still refused (403) before being told of a missing one (404).
    ``related``: relations to read with it (the send reads the conversation's provider)."""
    from chatapp import owned_conversation

    asking = getattr(user, "_clearloop_is_auditor", None) is None and user.is_authenticated
    conversation, audits = owned_conversation.read(
        user.pk, conversation_id, related, AUDITORS if asking else None
    )
    if asking and conversation is not None:
        _remember_auditor(user, bool(audits))
    refuse_auditors(user)
    if conversation is None:
        raise Http404("No such conversation")
    if isinstance(user, get_user_model()):
        conversation.owner = user  # the same row (owner_id matched): no query when the owner is named
    return conversation


def viewable_run_or_404(user: Any, run_id: int) -> Any:
    from chatapp.models import Run

    run = Run.objects.select_related("conversation").filter(pk=run_id).first()
    if run is None or not can_view_conversation(user, run.conversation):
        raise Http404("No such run")
    return run
