"""Opening a conversation reads each kind of row once for all its exchanges: the statements of the
page do not grow with the number of exchanges (they were about eleven per exchange: a 40-exchange
conversation took ~420 ms of CPU to open, docs/performance.md session 24)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from chatapp.models import Conversation, Message, Round, Run, RunEvent, ToolCall
from tests.exchanges import answered

pytestmark = pytest.mark.django_db


def conversation_of(owner, exchanges: int) -> Conversation:
    def rows(run: Run, i: int) -> None:
        Round.objects.create(
            run=run, index=0, kind="normal", provider_name="demo", model="m", request={}, response={}
        )
        ToolCall.objects.create(
            run=run, round_index=0, index=0, call_id=f"c{i}", name="read_file", arguments="{}"
        )
        RunEvent.objects.create(
            run=run, seq=1, type="round_started", payload={"round_index": 0}, durable=False
        )

    convo, runs = answered(owner, exchanges, each=rows)
    # An edited first question and a regenerated last answer: the ‹ i/n › switches are read too.
    Message.objects.create(conversation=convo, role="user", content="question 0, edited", payload={})
    Run.objects.create(
        conversation=convo, user_message=runs[-1].user_message, provider_name="demo", model="m"
    )
    return convo


def statements(client: Client, convo: Conversation) -> tuple[int, str]:
    client.get(f"/c/{convo.pk}/")  # the caches of a first request (provider rows, templates) are warm
    with CaptureQueriesContext(connection) as queries:
        page = client.get(f"/c/{convo.pk}/")
    assert page.status_code == 200
    return len(queries.captured_queries), page.content.decode()


def test_the_page_reads_the_same_statements_for_2_and_12_exchanges(cast):
    client = Client()
    client.force_login(cast["alice"])
    few, few_html = statements(client, conversation_of(cast["alice"], 2))
    many, many_html = statements(client, conversation_of(cast["alice"], 12))
    assert many == few, f"{few} statements for 2 exchanges, {many} for 12"
    # What the rows are for is on the page: every answer, every call, both switches.
    assert all(f"answer <strong>{i}</strong>" in many_html for i in range(12))
    assert many_html.count('data-call="c') >= 12 or many_html.count("read_file") >= 12
    assert "1/2" in many_html.replace(" ", "")  # the edited question's and the regenerated answer's ‹ 1/2 ›


def test_the_page_and_a_runs_fragment_leave_the_rounds_requests_unread(cast):
    # Each round's request holds the whole history before it: read for every exchange, opening a
    # conversation grew with the square of its length (docs/performance.md, session 26).
    convo = conversation_of(cast["alice"], 3)
    client = Client()
    client.force_login(cast["alice"])
    run = Run.objects.filter(conversation=convo, status="succeeded").order_by("-id").first()
    for url in (f"/c/{convo.pk}/", f"/runs/{run.pk}/fragment/"):
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200
        rounds = [q["sql"] for q in queries.captured_queries if 'FROM "chatapp_round"' in q["sql"]]
        assert rounds, f"{url} read no rounds"
        assert not any('"chatapp_round"."request"' in sql for sql in rounds), url
