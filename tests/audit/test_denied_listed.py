"""The audit list shows a run whose tool call was denied as "Denied", never "Succeeded"."""

from __future__ import annotations

import pytest

from chatapp.models import ToolCall
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db


def test_a_denied_call_makes_the_run_read_denied(cast, client_for):
    plain = make_run(cast["alice"], text="plain question")
    denied = make_run(cast["alice"], text="send a text", tools=(("send_message", '{"to": "1"}', "not sent"),))
    ToolCall.objects.filter(run=denied).update(status="denied")
    page = client_for("otto").get("/audit/").content.decode()
    rows = {
        text: next(r for r in page.split("<tr") if text in r) for text in ("send a text", "plain question")
    }
    assert 'class="status-denied"' in rows["send a text"] and "Succeeded" not in rows["send a text"]
    assert ">Succeeded<" in rows["plain question"] and plain.status == "succeeded"
