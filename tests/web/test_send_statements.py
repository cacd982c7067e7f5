"""What one send costs the web process (issue 15, target 1: at 20 simultaneous sends they queue in
one daphne process, so each send's statements and Python are everyone's wait). The exchange the send
answers with is a run that was queued a moment ago: nothing of it is read back (its rounds, calls,
links, answer and timeline are empty; whatever the worker wrote since comes through the websocket's
replay). Measured with ``python -m bench.sendview.run``: 27 statements and ~35 ms of CPU per send
before, 18 and ~19 ms after (docs/performance.md, session 8)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from chatapp.models import Conversation, Run

pytestmark = pytest.mark.django_db
NOT_READ_ON_A_SEND = (
    "chatapp_round",
    "chatapp_toolcall",
    "chatapp_toollink",
    "chatapp_runevent",
    "chatapp_upload",
)


@pytest.fixture
def alice(cast):
    client = Client()
    client.force_login(cast["alice"])
    return client


def _sent(alice, cast, text: str) -> tuple[str, list[str]]:
    draft = alice.post("/c/new/")["Location"]
    alice.post(f"{draft}send/", {"message": "first"}, HTTP_HX_REQUEST="true")  # the list and title settle
    Run.objects.filter(conversation__owner=cast["alice"]).update(status="succeeded")
    Conversation.objects.filter(owner=cast["alice"]).update(active_run=None)
    with CaptureQueriesContext(connection) as queries:
        response = alice.post(f"{draft}send/", {"message": text}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode(), [q["sql"] for q in queries.captured_queries]


def rows_of(node: dict, table: str) -> int:
    """Rows a query plan (EXPLAIN ANALYZE, JSON) read from ``table``, over all its loops: those its
    scans returned and those they read and dropped (a filter's, an index recheck's). Counting only the
    returned ones passed a scan of the whole table whose filter kept one row (session 18)."""
    read = ("Actual Rows", "Rows Removed by Filter", "Rows Removed by Index Recheck")
    here = sum(node.get(key, 0) for key in read) * node.get("Actual Loops", 1)
    return (here if node.get("Relation Name") == table else 0) + sum(
        rows_of(child, table) for child in node.get("Plans", [])
    )


def explained(sql: str, params: list) -> dict:
    """EXPLAIN ANALYZE's plan of ``sql`` as PostgreSQL plans it once the table is too large to scan
    whole (seq scans off): a fixture of a few hundred rows is read whole more cheaply than through an
    index, so only this shows that the rows a send reads do not grow with the table."""
    import json

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def test_a_send_reads_nothing_of_the_run_it_just_queued(alice, cast):
    html, statements = _sent(alice, cast, "what is new?")
    run = Run.objects.filter(conversation__owner=cast["alice"]).latest("id")
    assert f'data-run="{run.pk}"' in html and "what is new?" in html
    # Each read's own table: what precedes its first WHERE (the conversation list's EXISTS over
    # uploads is in its WHERE).
    read = [s.split(" WHERE ")[0] for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert not [s for s in read if any(f'FROM "{t}"' in s for t in NOT_READ_ON_A_SEND)], read
    # Nor the run's answers (a run that has not ended has none: the audit record pins that unread).
    answers = [s for s in statements if 'FROM "chatapp_message"' in s and "assistant" in s]
    assert not answers, answers


@pytest.mark.skipif(connection.vendor != "postgresql", reason="counted on PostgreSQL (transactions differ)")
def test_a_send_takes_at_most_sixteen_statements(alice, cast):
    _, statements = _sent(alice, cast, "count me")
    # The test's own savepoints aside (in production: BEGIN and COMMIT). The tests run in demo mode,
    # which reads the environment's providers (two statements more than production's 14). Session
    # 15 (18 before): the limits' counts and the quotas' EXISTS are one statement, and whether the
    # writer audits is asked in the conversation's read.
    counted = [s for s in statements if not s.startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]
    assert len(counted) <= 16, "\n".join(s[:120] for s in counted)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
def test_the_limits_read_the_runs_in_flight_and_of_the_last_minute_not_the_whole_history(cast):
    """A send's per-user limits counted over every run the user ever had: 4.5 ms for 1,000 runs and
    growing with them, on every send. Now only rows either count can include are read."""
    from datetime import timedelta

    from django.db.models import Count, Q
    from django.utils import timezone

    from chatapp.services.limits import IN_FLIGHT, counted_runs

    old = timezone.now() - timedelta(days=3)
    convos = Conversation.objects.bulk_create(Conversation(owner=cast["alice"]) for _ in range(400))
    Run.objects.bulk_create(Run(conversation=c, status="succeeded") for c in convos)
    Run.objects.filter(conversation__owner=cast["alice"]).update(created_at=old)
    Run.objects.create(conversation=convos[0], status="running")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chatapp_run; ANALYZE chatapp_conversation")
    since = timezone.now() - timedelta(seconds=60)
    counted = counted_runs(cast["alice"].pk, since)
    plan = explained(*counted.query.sql_with_params())

    assert rows_of(plan, "chatapp_run") <= 5, plan  # the one in flight, not the 400 before it
    assert counted.aggregate(flight=Count("pk", filter=Q(status__in=IN_FLIGHT)))["flight"] == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
def test_is_it_on_top_reads_the_newer_conversations_not_the_whole_list(cast):
    """The send asks whether its conversation leads the list (to re-render it only when it moves);
    that read every conversation of the user (3.4 ms for 1,000) on every send."""
    from datetime import timedelta

    from django.utils import timezone

    from chatapp.models import Message
    from chatapp.services.conversations import is_on_top

    convos = Conversation.objects.bulk_create(Conversation(owner=cast["alice"]) for _ in range(400))
    Message.objects.bulk_create(Message(conversation=c, role="user", content="hi") for c in convos)
    for age, convo in enumerate(convos):
        Conversation.objects.filter(pk=convo.pk).update(updated_at=timezone.now() - timedelta(minutes=age))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chatapp_conversation; ANALYZE chatapp_message")
    top, second = (Conversation.objects.get(pk=c.pk) for c in convos[:2])
    assert is_on_top(cast["alice"], top) and not is_on_top(cast["alice"], second)
    assert not is_on_top(cast["bob"], top)  # someone else's conversation is never on their list

    from chatapp.services.conversations import leading_since

    query = leading_since(cast["alice"], top)[:1]  # what is_on_top runs
    plan = explained(*query.query.sql_with_params())

    assert rows_of(plan, "chatapp_conversation") <= 2, plan


def test_the_limits_counts_in_sql_equal_the_orm_s_and_read_only_the_counted_runs(cast):
    """``limits._counts`` is ``counted_runs``'s aggregate written as SQL (session 15): the same
    counts over runs in flight, of the last minute, older, and another user's; on PostgreSQL its plan
    reads only the rows either count includes, as the ORM's does (the test above)."""
    from datetime import timedelta

    from django.db.models import Count, Q
    from django.utils import timezone

    from chatapp.models import Quota
    from chatapp.services.limits import IN_FLIGHT, _counts, counted_runs, counts_statement

    old = timezone.now() - timedelta(days=3)
    mine = Conversation.objects.bulk_create(Conversation(owner=cast["alice"]) for _ in range(60))
    theirs = Conversation.objects.bulk_create(Conversation(owner=cast["bob"]) for _ in range(3))
    statuses = ["succeeded", "running", "queued", "failed", "awaiting_approval", "cancelled"]
    Run.objects.bulk_create(Run(conversation=c, status=statuses[i % 6]) for i, c in enumerate(mine))
    Run.objects.bulk_create(Run(conversation=c, status="running") for c in theirs)  # one active each
    Run.objects.filter(conversation__in=mine[:40]).update(created_at=old)
    since = timezone.now() - timedelta(seconds=60)
    expected = counted_runs(cast["alice"].pk, since).aggregate(
        flight=Count("pk", filter=Q(status__in=IN_FLIGHT)),
        minute=Count("pk", filter=Q(created_at__gte=since)),
    )
    assert _counts(cast["alice"].pk, since) == {**expected, "quotas": False}
    assert expected == {"flight": 20, "minute": 20}  # the fixture is what it says
    Quota.objects.create(user=cast["bob"], enabled=True)
    assert _counts(cast["alice"].pk, since)["quotas"] is True
    if connection.vendor != "postgresql":
        return
    Run.objects.filter(conversation__in=mine).update(created_at=old, status="succeeded")
    Run.objects.create(conversation=mine[0], status="running")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chatapp_run; ANALYZE chatapp_conversation")
    sql, params = counts_statement(cast["alice"].pk, since)
    plan = explained(sql, params)

    assert rows_of(plan, "chatapp_run") <= 5, plan  # the one in flight, not the 60 before it
    # Prepared (DB_PREPARED_STATEMENTS), PostgreSQL may switch to a plan made without the values after
    # five runs: that plan must read no more.
    generic = _generic_plan(sql, params)
    assert rows_of(generic, "chatapp_run") <= 5, generic


def _generic_plan(sql: str, params: list) -> dict:
    """EXPLAIN ANALYZE of ``sql`` prepared and run with the plan PostgreSQL makes without the values."""
    import json

    numbered, count = sql, 0
    while "%s" in numbered:
        count += 1
        numbered = numbered.replace("%s", f"${count}", 1)
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE plan_probe AS {numbered}")
        try:
            placeholders = ", ".join(["%s"] * len(params))
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE plan_probe({placeholders})", params)
            plan = cursor.fetchone()[0]
        finally:
            cursor.execute("DEALLOCATE plan_probe")
            cursor.execute("RESET plan_cache_mode")
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def test_is_on_top_written_out_answers_as_the_orm(cast):
    """services/conversations.is_on_top runs its statement written out on PostgreSQL."""
    from datetime import timedelta

    from django.utils import timezone

    from chatapp.models import Message, Upload
    from chatapp.services.conversations import is_on_top, leading_since

    alice, now = cast["alice"], timezone.now()
    convos = []
    for i, started in enumerate(["message", "upload", None, "message"]):
        convo = Conversation.objects.create(owner=alice, title=f"c{i}")
        if started == "message":
            Message.objects.create(conversation=convo, role="user", content="hi", payload={})
        elif started == "upload":
            Upload.objects.create(
                uploaded_by=alice, conversation=convo, name="a.txt", size=1, sha256="0" * 64
            )
        Conversation.objects.filter(pk=convo.pk).update(updated_at=now - timedelta(minutes=10 - i))
        convos.append(convo)
    Conversation.objects.filter(pk=convos[3].pk).update(deleted_at=now)  # the newest is deleted
    Conversation.objects.create(owner=cast["bob"])  # another owner's
    answers = []
    for convo in convos:
        convo.refresh_from_db()
        orm = leading_since(alice, convo).first() == convo.pk
        assert is_on_top(alice, convo) == orm, convo.title
        answers.append(orm)
    assert answers == [False, True, False, False]  # c1 (an upload) leads; c2 was never started


def test_the_leaf_id_is_the_leafs(cast):
    from chatapp.services.branches import leaf, leaf_id

    convo = Conversation.objects.create(owner=cast["alice"])
    other = Conversation.objects.create(owner=cast["bob"])
    assert leaf_id(convo) is None and leaf(convo) is None
    first = Run.objects.create(conversation=convo, provider_name="demo", model="m", status="succeeded")
    second = Run.objects.create(conversation=convo, provider_name="demo", model="m", status="succeeded")
    foreign = Run.objects.create(conversation=other, provider_name="demo", model="m", status="succeeded")
    for active, expected in [(None, second), (first, first), (second, second), (foreign, second)]:
        Conversation.objects.filter(pk=convo.pk).update(active_run=active)
        convo.refresh_from_db()
        assert leaf_id(convo) == leaf(convo).pk == expected.pk
