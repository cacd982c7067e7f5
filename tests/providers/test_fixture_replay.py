"""Every recorded stream, replayed over real HTTP, exactly and split at random byte boundaries."""

from __future__ import annotations

import pytest
from provider_cases import CASES, CASES_BY_ID
from provider_fixture_server import Reply
from provider_helpers import assert_case, collect, make_provider

VARIANTS = ["exact", "split0", "split1", "split2", "crlf"]


def _reply(body: bytes, variant: str) -> Reply:
    if variant == "crlf":
        return Reply.sse(body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), split_seed=7)
    if variant.startswith("split"):
        return Reply.sse(body, split_seed=int(variant[5:]))
    return Reply.sse(body)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case_id", [c.id for c in CASES])
async def test_fixture_replays_to_the_recorded_response(server, http, case_id, variant):
    case = CASES_BY_ID[case_id]
    server.queue(_reply(case.body, variant))
    provider = make_provider(http, server.base_url, case.kind, case.preset)
    events = await collect(provider)
    assert_case(case, events)
    assert len(server.requests) == 1
