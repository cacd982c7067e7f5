"""Prompt-cache reads and writes per round: in the chat trace, the usage chart, the auditor's run view
and every export (JSON trace, JSONL, OpenTelemetry)."""

from __future__ import annotations

import json
import re

import pytest

from chatapp.models import Round
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db

CACHED = {
    "prompt_tokens": 4210,
    "completion_tokens": 40,
    "total_tokens": 4250,
    "cached_tokens": 3900,
    "cache_write_tokens": 260,
}


@pytest.fixture
def run(cast):
    run = make_run(cast["alice"], text="read the files")
    Round.objects.create(
        run=run, index=1, provider_name="claude", model="claude-sonnet-5", finish_reason="stop", usage=CACHED
    )
    return run


def _round_usage(html: str, index: int) -> dict[str, str]:
    block = html.split(f'data-round="{index}"', 1)[1].split("</dl>", 1)[0]
    return dict(re.findall(r'data-usage="([a-z-]+)">([^<]*)<', block))


def test_chat_trace_shows_cache_reads_and_writes_per_round(client_for, run):
    html = client_for("alice").get(f"/c/{run.conversation_id}/").content.decode()
    assert _round_usage(html, 1) == {
        "prompt": "4210",
        "completion": "40",
        "cache-read": "3900",
        "cache-write": "260",
    }
    assert _round_usage(html, 0)["cache-read"] == "–"  # not reported: unknown, never 0


def test_usage_chart_marks_the_cached_part_and_names_both_counts(client_for, run):
    html = client_for("alice").get(f"/c/{run.conversation_id}/").content.decode()
    assert 'class="cached"' in html
    # Numbers are localised (grouped as the page's language writes them).
    assert "4,210 prompt (3,900 cache read, 260 cache write) + 40 completion tokens" in html


def test_auditor_run_view_shows_cache_counts_per_round(client_for, run):
    html = client_for("otto").get(f"/audit/runs/{run.pk}/rounds/1/").content.decode()  # opened round
    assert 'data-usage="cache-read">3900<' in html and 'data-usage="cache-write">260<' in html


def test_exports_carry_cache_counts(client_for, run):
    trace = client_for("alice").get(f"/api/runs/{run.pk}/trace").json()
    assert trace["rounds"][1]["usage"]["cache_write_tokens"] == 260
    assert trace["usage"]["cached_tokens"] == 3900 and trace["usage"]["cache_write_tokens"] == 260
    body = b"".join(client_for("otto").get("/audit/export.jsonl").streaming_content).decode()
    line = json.loads(body.splitlines()[0])
    assert line["rounds"][1]["usage"]["cached_tokens"] == 3900
    otel = json.dumps(client_for("otto").get(f"/audit/runs/{run.pk}/otel.json").json())
    assert '"gen_ai.usage.cache_read.input_tokens", "value": {"intValue": "3900"}' in otel
    assert '"gen_ai.usage.cache_creation.input_tokens", "value": {"intValue": "260"}' in otel
