"""The auditors' JSONL export is sent run by run under daphne (chatapp/streaming.py, ``database=True``):
a plain iterator was first collected whole in daphne's memory (every run's trace of the instance)
before its first byte left. The first line arrives long before the last, and every run is there."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.audit.conftest import make_run
from tests.integration.client import session_for

pytestmark = pytest.mark.django_db(transaction=True)

RUNS = 300


def test_the_export_streams_each_run_as_it_is_read(cast, live_stack):
    for n in range(RUNS):
        make_run(cast["alice"], text=f"question {n}", final_text=f"answer {n}")
    cookies = {"sessionid": session_for(cast["otto"])}
    started = time.monotonic()
    lines: list[str] = []
    first = 0.0
    with httpx.Client(base_url=live_stack.base_url, cookies=cookies, timeout=120) as client:
        with client.stream("GET", "/audit/export.jsonl") as response:
            assert response.status_code == 200, response.read()[:300]
            for line in response.iter_lines():
                if line:
                    lines.append(line)
                    first = first or time.monotonic() - started
    total = time.monotonic() - started
    runs = [json.loads(line) for line in lines]
    assert len(runs) == RUNS and {r["text"] for r in runs} == {f"answer {n}" for n in range(RUNS)}
    # Collected whole, the first line would come with the last; streamed, it comes after one run's read.
    assert first < total / 3, (first, total)
