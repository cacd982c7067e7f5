"""A run's row read under its lock, with its question, in one SQL statement written out.

Every lease and every end reads the run this way (``worker/lease.py``, ``worker/store.py``): the audit
record of the move pins the question's digest, and an end asks whether a call still waits for a
decision or was denied. Through the ORM (``select_for_update`` + ``select_related`` + two ``Exists``
annotations) building and compiling that query cost ~2 ms of CPU, more than running it
(docs/performance.md, session 16); the statement below is the ORM's, written once. The calls' two
conditions are the ones of ``run_lifecycle.undecided_calls`` and ``run_lifecycle.denied_calls``;
``tests/worker/test_locked_run.py`` checks both give the same answers over every kind of call, and
that the row read equals the ORM's.

SQLite (the embedded demo, ``make check``) goes through the ORM: it has no row locks to take.
"""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models import Exists, OuterRef

from chatapp import row_sql
from chatapp.bound_cursor import bound_cursor
from chatapp.models import Message, Run, ToolCall
from chatapp.services.run_lifecycle import denied_calls, undecided_calls

_S = ToolCall.Status
_RUN_TABLE, _CALL_TABLE, _MESSAGE_TABLE = (f'"{m._meta.db_table}"' for m in (Run, ToolCall, Message))
# ``undecided_calls``: waiting for an approver, or approved but held back for a sign-in.
_UNDECIDED = (
    f"SELECT 1 FROM {_CALL_TABLE} c WHERE c.run_id = r.id AND (c.status = '{_S.AWAITING_APPROVAL}'"  # noqa: S608
    f" OR (c.status = '{_S.APPROVED}' AND c.error_code = 'sign_in_required'))"
)
# ``denied_calls``: refused by someone or a policy; not the calls closed because the run ended.
_DENIED = (
    f"SELECT 1 FROM {_CALL_TABLE} c WHERE c.run_id = r.id AND c.status = '{_S.DENIED}'"  # noqa: S608
    " AND c.error_code <> 'run_ended'"
)


@cache
def _sql(undecided: bool, denied: bool) -> str:
    extra = "".join(
        f", EXISTS({sub})" for wanted, sub in ((undecided, _UNDECIDED), (denied, _DENIED)) if wanted
    )
    return (
        f"SELECT {row_sql.columns(Run, 'r')}, m.id, m.content{extra} FROM {_RUN_TABLE} r"  # noqa: S608 - the models' own names
        f" LEFT JOIN {_MESSAGE_TABLE} m ON m.id = r.user_message_id"
        " WHERE r.id = %s FOR UPDATE OF r"
    )


def locked_run(run_id: int, *, undecided: bool = False, denied: bool = False) -> Run | None:
    """The run, its row locked until the caller's transaction ends, its ``user_message`` loaded (id
    and content; any other field of it is read on first use). ``undecided``: annotate
    ``has_undecided_calls``; ``denied``: annotate ``had_denied_call``. None when there is no such run.
    Call inside ``transaction.atomic``."""
    if connection.vendor != "postgresql":
        return _through_orm(run_id, undecided, denied)
    with bound_cursor(connection) as cursor:
        cursor.execute(_sql(undecided, denied), [run_id])
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(row_sql.fields(Run))
    run = row_sql.instance(Run, row[:n])
    message_id, content, *flags = row[n:]
    question = None
    if message_id is not None:
        question = row_sql.partial(Message, ["id", "content"], [message_id, content])
    Run.user_message.field.set_cached_value(run, question)
    if undecided:
        run.has_undecided_calls = flags.pop(0)  # an annotation
    if denied:
        run.had_denied_call = flags.pop(0)  # an annotation
    return run


def _through_orm(run_id: int, undecided: bool, denied: bool) -> Run | None:
    runs = Run.objects.select_for_update(of=("self",)).select_related("user_message")
    if undecided:
        runs = runs.annotate(has_undecided_calls=Exists(undecided_calls(OuterRef("pk"))))
    if denied:
        runs = runs.annotate(had_denied_call=Exists(denied_calls(OuterRef("pk"))))
    return runs.filter(pk=run_id).first()
