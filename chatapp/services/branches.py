"""A conversation as a tree: edits and regenerations make branches, one branch is shown and sent.

The tree is made of two links: a user message follows the run (answer) it replies to
(``Message.parent_run``; the first question has none), and a run answers one user message
(``Run.user_message``). Editing a question adds a sibling message with the same parent; regenerating
adds a sibling run for the same message. Nothing is ever deleted by either.

``Conversation.active_run`` is the leaf of the branch on screen (null: the latest run). The page shows
the path from the root to that leaf; the model gets exactly that path (``worker/context.history``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.utils.translation import gettext as _

from chatapp.bound_cursor import bound_cursor
from chatapp.models import ACTIVE_STATUSES, Conversation, Message, Run
from chatapp.services.errors import ChatError


class BranchSwitchRefused(ChatError):
    """A branch cannot be switched now (a run is streaming), or the target is not in the conversation."""


@dataclass(frozen=True)
class Position:
    """Where one message or run sits among its siblings: ``index`` of ``count`` (1-based)."""

    index: int
    count: int
    previous: int | None
    next: int | None


def leaf_id(convo: Conversation) -> int | None:
    """``leaf(convo).pk`` in one statement written out (every send asks it for its question's parent;
    the ORM's reads cost ~1 ms of its CPU): the conversation's active run when it is one of its runs,
    else its newest run. Plain SQL that PostgreSQL and SQLite both run."""
    with bound_cursor(connection) as cursor:
        cursor.execute(_LEAF, [convo.pk, convo.active_run_id or 0])
        row = cursor.fetchone()
    return row[0] if row else None


_LEAF = (
    f"SELECT id FROM {Run._meta.db_table} WHERE conversation_id = %s ORDER BY id = %s DESC, id DESC LIMIT 1"  # noqa: S608
)


def leaf(convo: Conversation) -> Run | None:
    if convo.active_run_id:
        run = Run.objects.filter(pk=convo.active_run_id, conversation=convo).first()
        if run is not None:
            return run
    return convo.runs.order_by("-id").first()


def path(convo: Conversation, until: Run | None = None) -> list[Run]:
    """The runs of the active branch from the first question to ``until`` (default: the leaf).

    The conversation's runs are read once with their questions (each run's ``user_message`` and
    ``conversation`` are set on it): walking up one run at a time read two rows per exchange, and a
    40-exchange page spent most of its time there (docs/performance.md, session 24)."""
    by_id = {
        run.pk: run
        for run in Run.objects.filter(conversation_id=convo.pk).select_related("user_message").order_by("id")
    }
    for each in by_id.values():
        each.conversation = convo
    run: Run | None
    if until is not None:
        run = by_id.get(until.pk, until)
    else:
        run = by_id.get(convo.active_run_id or 0) or (by_id[max(by_id)] if by_id else None)
    runs: list[Run] = []
    seen: set[int] = set()
    while run is not None and run.pk not in seen:
        seen.add(run.pk)
        runs.append(run)
        question = run.user_message
        run = by_id.get(question.parent_run_id or 0) if question is not None else None
    runs.reverse()
    return runs


def position_among(ids: list[int], current: int) -> Position:
    """``current``'s place among its siblings' ids (in order); alone when it is not among them."""
    return _position(ids, current) if current in ids else Position(1, 1, None, None)


def _position(ids: list[int], current: int) -> Position:
    at = ids.index(current)
    return Position(
        index=at + 1,
        count=len(ids),
        previous=ids[at - 1] if at > 0 else None,
        next=ids[at + 1] if at + 1 < len(ids) else None,
    )


def message_position(message: Message) -> Position:
    ids = list(
        Message.objects.filter(
            conversation_id=message.conversation_id,
            role=Message.Role.USER,
            parent_run_id=message.parent_run_id,
        )
        .order_by("id")
        .values_list("id", flat=True)
    )
    return _position(ids, message.pk)


def run_position(run: Run) -> Position:
    ids = list(
        Run.objects.filter(user_message_id=run.user_message_id).order_by("id").values_list("id", flat=True)
    )
    return _position(ids, run.pk) if run.pk in ids else Position(1, 1, None, None)


def leaf_below_run(run: Run) -> Run:
    """Follow the newest reply, then its newest answer, until the branch ends."""
    while True:
        reply = Message.objects.filter(parent_run=run, role=Message.Role.USER).order_by("-id").first()
        answer = reply and Run.objects.filter(user_message=reply).order_by("-id").first()
        if not answer:
            return run
        run = answer


def leaf_below_message(message: Message) -> Run | None:
    answer = Run.objects.filter(user_message=message).order_by("-id").first()
    return leaf_below_run(answer) if answer else None


def refuse_while_streaming(convo: Conversation) -> None:
    if convo.runs.filter(status__in=ACTIVE_STATUSES).exists():
        raise BranchSwitchRefused(
            _(
                "The assistant is still answering in this conversation. "
                "Wait for it or stop it, then switch branches."
            )
        )


def switch_to(convo: Conversation, *, message_id: int | None = None, run_id: int | None = None) -> Run:
    """Show the branch through this message (or run), down to its newest leaf."""
    with transaction.atomic():
        convo = Conversation.objects.select_for_update().get(pk=convo.pk)
        refuse_while_streaming(convo)
        target: Run | None = None
        if message_id is not None:
            message = Message.objects.filter(
                pk=message_id, conversation=convo, role=Message.Role.USER
            ).first()
            target = leaf_below_message(message) if message else None
        elif run_id is not None:
            run = Run.objects.filter(pk=run_id, conversation=convo).first()
            target = leaf_below_run(run) if run else None
        if target is None:
            raise BranchSwitchRefused(_("That branch is not part of this conversation."))
        convo.active_run = target
        convo.save(update_fields=["active_run"])
    return target
