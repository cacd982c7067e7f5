"""The rows a conversation page shows for its runs, read once for all of them.

Each exchange on the page needs its run's answer, rounds, calls, links, question's uploads, siblings
(‹ i/n ›) and waterfall events. Read run by run that was about eleven statements per exchange: a
40-exchange conversation took ~420 ms of CPU to open (docs/performance.md, session 24). Here each
kind of row is one statement whatever the number of exchanges; ``display._exchange`` takes them from
here and reads them itself only for a run shown alone (a fragment).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, prefetch_related_objects

from chatapp.models import Conversation, Message, Round, Run
from chatapp.services.branches import Position, position_among
from chatapp.views.timeline import events_of


@dataclass(frozen=True)
class PageRows:
    answers: dict[int, Message]  # run id -> its newest assistant message
    questions_by_parent: dict[int | None, list[int]]  # parent run id -> user message ids, in order
    runs_by_question: dict[int, list[int]]  # user message id -> run ids, in order
    events: dict[int, list[dict[str, Any]]]  # run id -> its waterfall events

    @classmethod
    def read(cls, convo: Conversation, runs: list[Run]) -> PageRows:
        ids = [run.pk for run in runs]
        # run.rounds.all(), run.tool_calls.all() (each with its approval), run.links.all() and the
        # question's uploads come from these (Django's prefetch: one statement per relation). A round's
        # request (the whole history before it, the tools offered) is the trace's and the API's, never
        # the page's: read, it made opening a conversation quadratic in its length (session 26).
        prefetch_related_objects(
            runs, Prefetch("rounds", Round.objects.defer("request")), "tool_calls__approval", "links"
        )
        prefetch_related_objects([r.user_message for r in runs if r.user_message is not None], "uploads")
        answers: dict[int, Message] = {}
        for message in Message.objects.filter(run_id__in=ids, role=Message.Role.ASSISTANT).order_by("-id"):
            answers.setdefault(message.run_id, message)  # type: ignore[arg-type]
        questions: dict[int | None, list[int]] = defaultdict(list)
        siblings = Message.objects.filter(conversation_id=convo.pk, role=Message.Role.USER).order_by("id")
        for message_id, parent in siblings.values_list("id", "parent_run_id"):
            questions[parent].append(message_id)
        answered: dict[int, list[int]] = defaultdict(list)
        for run_id, question in (
            Run.objects.filter(conversation_id=convo.pk).order_by("id").values_list("id", "user_message_id")
        ):
            answered[question].append(run_id)
        return cls(answers, questions, answered, events_of(ids))

    def question_at(self, message: Message) -> Position:
        return position_among(self.questions_by_parent.get(message.parent_run_id, []), message.pk)

    def answer_at(self, run: Run) -> Position:
        return position_among(self.runs_by_question.get(run.user_message_id or 0, []), run.pk)
