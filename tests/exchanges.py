"""A conversation of answered questions written straight to the database (no model, no worker): for
tests of what opening a conversation reads and shows."""

from __future__ import annotations

from collections.abc import Callable

from chatapp.models import Conversation, Message, Run


def answered(
    owner,
    exchanges: int,
    *,
    answer: Callable[[int], str] = lambda i: f"answer **{i}**",
    each: Callable[[Run, int], None] = lambda run, i: None,
) -> tuple[Conversation, list[Run]]:
    """``exchanges`` questions in a row, each with its succeeded run and answer (``each`` adds the
    run's other rows); the last run is the conversation's active one."""
    convo = Conversation.objects.create(owner=owner, title=f"{exchanges} exchanges")
    runs: list[Run] = []
    previous = None
    for i in range(exchanges):
        question = Message.objects.create(
            conversation=convo, role="user", content=f"question {i}", payload={}, parent_run=previous
        )
        run = Run.objects.create(
            conversation=convo, user_message=question, provider_name="demo", model="m", status="succeeded"
        )
        Message.objects.create(conversation=convo, run=run, role="assistant", content=answer(i), payload={})
        each(run, i)
        question.run = previous = run
        question.save(update_fields=["run"])
        runs.append(run)
    convo.active_run = previous
    convo.save(update_fields=["active_run"])
    return convo, runs
