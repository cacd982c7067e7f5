"""The auditor's trace browser: who may see it, what each filter does, what a run page shows."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client
from django.utils import timezone

from chatapp.models import Run
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db


def _listed(response) -> set[int]:
    return {int(n) for n in re.findall(r'href="/audit/runs/(\d+)/"', response.content.decode())}


@pytest.fixture
def runs(cast):
    alice, bob = cast["alice"], cast["bob"]
    a = make_run(alice, text="weather in Paris", final_text="sunny", provider="demo")
    b = make_run(
        bob,
        text="list my files",
        final_text="two files",
        status="failed",
        provider="openai",
        tools=(("workspace__list_files", '{"path": "reports"}', '["q1.txt"]'),),
    )
    c = make_run(
        alice,
        text="query the db",
        final_text="42 rows",
        provider="openai",
        tools=(("sql_query", '{"sql": "select count(*) from orders"}', "42"),),
    )
    Run.objects.filter(pk=a.pk).update(created_at=timezone.now() - dt.timedelta(days=10))
    return {"a": a, "b": b, "c": c}


@pytest.mark.parametrize("name", ["otto", "ada"])
def test_auditors_and_superusers_see_every_users_runs(client_for, runs, name):
    response = client_for(name).get("/audit/")
    assert response.status_code == 200
    assert _listed(response) == {r.pk for r in runs.values()}


@pytest.mark.parametrize("name", ["alice", "bob", None])
@pytest.mark.parametrize(
    "path",
    ["/audit/", "/audit/runs/{id}/", "/audit/runs/{id}/otel.json", "/audit/export.jsonl", "/audit/log/"],
)
def test_everyone_else_gets_404(client_for, runs, name, path):
    client = client_for(name) if name else Client()
    assert client.get(path.format(id=runs["a"].pk)).status_code == 404


def test_staff_who_is_not_an_auditor_gets_404(client_for, cast, runs):
    cast["bob"].is_staff = True
    cast["bob"].save()
    assert client_for("bob").get("/audit/").status_code == 404


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("user=alice", {"a", "c"}),
        ("user=BOB", {"b"}),
        ("status=failed", {"b"}),
        ("provider=openai", {"b", "c"}),
        ("tool=sql", {"c"}),
        ("tool=list_files", {"b"}),
        ("q=paris", {"a"}),  # the user's message
        ("q=42+rows", {"c"}),  # the final text
        ("q=orders", {"c"}),  # tool arguments
        ("q=workspace__list", {"b"}),  # tool name
        ("q=two+files", {"b"}),
        ("user=alice&provider=openai", {"c"}),
        ("user=nobody", set()),
    ],
)
def test_each_filter_narrows_the_list(client_for, runs, query, expected):
    response = client_for("otto").get(f"/audit/?{query}")
    assert response.status_code == 200
    assert _listed(response) == {runs[k].pk for k in expected}


def test_the_date_range_filter(client_for, runs):
    today = timezone.localdate()
    old = today - dt.timedelta(days=10)
    otto = client_for("otto")
    assert _listed(otto.get(f"/audit/?date_from={today}")) == {runs["b"].pk, runs["c"].pk}
    assert _listed(otto.get(f"/audit/?date_to={old}")) == {runs["a"].pk}
    assert _listed(otto.get(f"/audit/?date_from={old}&date_to={old}")) == {runs["a"].pk}


def test_an_invalid_filter_lists_nothing_and_says_why(client_for, runs):
    response = client_for("otto").get("/audit/?date_from=2030-01-02&date_to=2030-01-01")
    assert _listed(response) == set()
    assert "start date is after the end date" in response.content.decode()
    response = client_for("otto").get("/audit/?provider=no-such-provider")
    assert _listed(response) == set() and "not valid" in response.content.decode()


def test_the_list_is_paginated_and_pages_keep_the_filter(client_for, cast):
    for i in range(30):
        make_run(cast["alice"], text=f"question {i}")
    otto = client_for("otto")
    first = otto.get("/audit/?user=alice")
    assert len(_listed(first)) == 25 and "Page 1 of 2" in first.content.decode()
    assert "?user=alice&amp;page=2" in first.content.decode()
    second = otto.get("/audit/?user=alice&page=2")
    assert len(_listed(second)) == 5 and not _listed(first) & _listed(second)


def test_htmx_gets_only_the_results_fragment(client_for, runs):
    response = client_for("otto").get("/audit/?user=bob", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="results">') and "<html" not in body
    assert _listed(response) == {runs["b"].pk}


def test_the_run_page_shows_raw_request_and_response_with_secrets_redacted(client_for, cast):
    secret = "sk-test-" + "a1B2c3D4e5F6g7H8i9J0"
    run = make_run(
        cast["alice"],
        request={"model": "m", "messages": [{"role": "user", "content": f"my key is {secret}"}]},
        response={"response_id": "resp-77", "choices": [{"text": f"echo {secret}"}], "model": "m"},
        tools=(("http_get", f'{{"auth": "{secret}"}}', f"token {secret}"),),
        text=f"please use {secret}",
        approver=cast["ada"],
    )
    response = client_for("otto").get(f"/audit/runs/{run.pk}/")
    body = response.content.decode()
    assert response.status_code == 200
    # The round's raw request and response are loaded when the auditor opens the round.
    assert "resp-77" not in body and f'hx-get="/audit/runs/{run.pk}/rounds/0/"' in body
    raw = client_for("otto").get(f"/audit/runs/{run.pk}/rounds/0/").content.decode()
    assert client_for("alice").get(f"/audit/runs/{run.pk}/rounds/0/").status_code in (403, 404)
    body += raw
    assert secret not in body and "sk-test" not in body
    assert "[REDACTED]" in body
    assert "resp-77" in body and "&quot;messages&quot;: [" in body  # the raw JSON, indented and escaped
    assert "looks fine" in body and "ada" in body  # the approval: who and why
    assert "run_started" in body  # the event log


def test_a_missing_run_is_404(client_for):
    assert client_for("otto").get("/audit/runs/999999/").status_code == 404


XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_stored_text_is_escaped_everywhere(client_for, cast):
    run = make_run(
        cast["alice"],
        text=XSS,
        final_text=XSS,
        tools=((XSS, XSS, XSS),),
        request={"messages": [{"content": XSS}]},
        response={"choices": [{"text": XSS}]},
        approver=cast["ada"],
    )
    from chatapp.audit import record

    record("export", actor=XSS, run_id=run.pk, payload={"x": XSS})
    otto = client_for("otto")
    for path in (f"/audit/runs/{run.pk}/", f"/audit/runs/{run.pk}/rounds/0/", "/audit/", f"/audit/?q={XSS[:8]}", "/audit/log/"):
        body = otto.get(path).content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body, path
        assert "&lt;script&gt;" in body or "&lt;scri" in body, path


def test_the_export_link_carries_the_current_filter_but_not_the_page(client_for, runs):
    body = client_for("otto").get("/audit/?user=alice&status=succeeded&page=1").content.decode()
    assert 'href="/audit/export.jsonl?user=alice&amp;status=succeeded"' in body


def test_the_pages_style_block_carries_the_csp_nonce(client_for, runs):
    response = client_for("otto").get(f"/audit/runs/{runs['b'].pk}/")
    nonce = re.search(r'<style nonce="([^"]+)">', response.content.decode()).group(1)
    assert f"'nonce-{nonce}'" in response["Content-Security-Policy"]
