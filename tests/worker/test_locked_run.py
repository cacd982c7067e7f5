"""The run's locked read written as SQL (services/locked_run.py) answers as the ORM's query did: the
same row, the same question, the same two questions about its calls, and the row lock taken."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from chatapp.models import Conversation, Message, Run, ToolCall
from chatapp.services.locked_run import _through_orm, locked_run

pytestmark = pytest.mark.django_db(transaction=True)
S = ToolCall.Status
# Each kind of call the two questions tell apart: (status, error_code).
CALLS = [
    (S.AWAITING_APPROVAL, ""),
    (S.APPROVED, "sign_in_required"),
    (S.APPROVED, ""),
    (S.DENIED, ""),
    (S.DENIED, "policy"),
    (S.DENIED, "run_ended"),
    (S.FAILED, "run_ended"),
    (S.SUCCEEDED, ""),
    (S.RUNNING, ""),
]


def _run(owner, question: str | None = "what is in config.yaml?", **fields) -> Run:
    convo = Conversation.objects.create(owner=owner)
    message = None
    if question is not None:
        message = Message.objects.create(
            conversation=convo, role="user", content=question, payload={"role": "user", "content": question}
        )
    return Run.objects.create(
        conversation=convo, provider_name="demo", model="m", user_message=message, **fields
    )


def _call(run: Run, index: int, status: str, error_code: str) -> None:
    ToolCall.objects.create(
        run=run,
        round_index=0,
        index=index,
        call_id=f"c{index}",
        name="t",
        status=status,
        error_code=error_code,
    )


def _both(run_id: int) -> tuple[Run | None, Run | None]:
    with transaction.atomic():
        sql = locked_run(run_id, undecided=True, denied=True)
    with transaction.atomic():
        orm = _through_orm(run_id, True, True)
    return sql, orm


@pytest.mark.parametrize(("status", "error_code"), CALLS)
def test_each_kind_of_call_gets_the_orms_answers(cast, status, error_code):
    run = _run(cast["alice"])
    _call(run, 0, S.SUCCEEDED, "")  # a settled call beside it changes nothing
    _call(run, 1, status, error_code)
    sql, orm = _both(run.pk)
    assert (sql.has_undecided_calls, sql.had_denied_call) == (orm.has_undecided_calls, orm.had_denied_call)


def test_the_answers_are_not_constant(cast):
    """The parametrized test above could pass with two constants: each answer is seen both ways."""
    answers = set()
    for status, error_code in CALLS:
        run = _run(cast["alice"])
        _call(run, 0, status, error_code)
        sql, _ = _both(run.pk)
        answers.add((sql.has_undecided_calls, sql.had_denied_call))
    assert answers == {(True, False), (False, True), (False, False)}


def test_the_row_and_its_question_equal_the_orms(cast):
    long_question = "问题 " * 5000  # long: stored once as a blob, unpacked when read
    run = _run(
        cast["alice"],
        long_question,
        status=Run.Status.RUNNING,
        final_text="答案 " * 5000,
        lease_owner="host:1:abc",
        lease_expires_at=timezone.now() + timedelta(seconds=60),
        deliveries=2,
        last_seq=7,
        cancel_requested=True,
    )
    sql, orm = _both(run.pk)
    for field in Run._meta.concrete_fields:
        assert getattr(sql, field.attname) == getattr(orm, field.attname), field.name
    assert sql.final_text == "答案 " * 5000
    with _no_queries():
        assert sql.user_message.content == orm.user_message.content == long_question
    assert sql.user_message.conversation_id == run.conversation_id  # any other field: read when used


def test_a_run_without_a_question_and_a_missing_run(cast):
    run = _run(cast["alice"], None)
    sql, orm = _both(run.pk)
    with _no_queries():
        assert sql.user_message is None and orm.user_message is None
    assert _both(run.pk + 1000) == (None, None)


def test_annotations_only_when_asked(cast):
    run = _run(cast["alice"])
    with transaction.atomic():
        plain = locked_run(run.pk)
    assert not hasattr(plain, "has_undecided_calls") and not hasattr(plain, "had_denied_call")


@pytest.mark.skipif(not settings.USES_POSTGRES, reason="SQLite has no row locks")
def test_the_row_stays_locked_until_the_transaction_ends(cast):
    run = _run(cast["alice"])
    seen: list[str] = []

    def other() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT id FROM chatapp_run WHERE id = %s FOR UPDATE NOWAIT", [run.pk])
            seen.append("took it")
        except OperationalError:
            seen.append("locked")
        finally:
            connection.close()

    with transaction.atomic():
        locked_run(run.pk)
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == ["locked", "took it"]


class _no_queries:
    def __enter__(self):
        from django.test.utils import CaptureQueriesContext

        self.capture = CaptureQueriesContext(connection)
        self.capture.__enter__()

    def __exit__(self, *exc):
        self.capture.__exit__(*exc)
        assert not self.capture.captured_queries, self.capture.captured_queries
