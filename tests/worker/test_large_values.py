"""Issue 16 item 8 / review L10: a large tool result or argument is stored once (content-addressed,
``chatapp/blobs.py``), and every reader - the trace API, the chat page, the audit export, a run rebuilt
on resume, ``verify_audit`` - still gets the whole value.

Measured with ``tests/worker/scenario.py`` (the real recorder and store, ``octet_length`` of every
content column of the run): before, a 1 MB result took 4.0 MB (its event, its call, the next round's
request and that round's event) and a 1 MB argument 11.0 MB; now each takes 1.0 MB plus ~10 KB of rows.
"""

from __future__ import annotations

import json
import random
import string

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from agent.context.budget import ContextLimits
from agent.loop import LoopSettings
from chatapp.audit import verify_chain
from chatapp.blobs import ESC_PREFIX, REF_PREFIX, referenced_by_run
from chatapp.models import Blob, Message, Round, RunEvent, ToolCall
from chatapp.worker.context import load_run_context
from tests.loop.loop_doubles import FuncToolbox, ScriptedProvider, call, info, reply, returning, rounds_so_far
from tests.worker.scenario import drive, new_run, stored_bytes

pytestmark = pytest.mark.django_db(transaction=True)
# Sizes are measured with PostgreSQL's functions, and the frozen rows are written as jsonb.
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="measured on PostgreSQL")

MB = 1_000_000
# A model whose window takes a megabyte, and no cap on results: the value reaches every place it can.
ROOMY = LoopSettings(limits=ContextLimits(context_window=5_000_000), result_cap_chars=2 * MB)


@pytest.fixture(autouse=True)
def _one_connection(settings):
    # Live frames go through their own connection in production; here they use the default one.
    settings.DELTA_DB = "default"


def big_text(chars: int = MB) -> str:
    """Random lower-case letters: nothing the redaction patterns match, little for compression."""
    return "".join(random.SystemRandom().choices(string.ascii_lowercase, k=chars))


def one_call_then_answer(name: str, arguments: dict) -> ScriptedProvider:
    def respond(request):
        if rounds_so_far(request) == 0:
            return reply(calls=[call("c1", name, arguments)])
        return reply("done")

    return ScriptedProvider(respond)


def finished_with_result(owner, result: str):
    run = new_run(owner)
    toolbox = FuncToolbox({"fetch": (info("fetch"), returning(result))})
    drive(run, one_call_then_answer("fetch", {}), toolbox, ROOMY)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    return run


@postgres_only
def test_a_1_mb_result_is_stored_once_and_every_reader_gets_it(cast):
    result = big_text()
    run = finished_with_result(cast["alice"], result)

    sizes = stored_bytes(run.pk)
    assert sum(sizes.values()) < 1.5 * MB, sizes
    assert sizes["chatapp_blob"] >= MB and len(referenced_by_run(run.pk)) == 1, sizes

    # The rows, as the ORM loads them: the event, the call, the next round's request.
    stored = ToolCall.objects.get(run=run)
    assert stored.result.endswith(result)
    event = RunEvent.objects.get(run=run, type="tool_call", payload__status="succeeded")
    assert event.payload["result"] == stored.result
    request = Round.objects.get(run=run, index=1).request
    assert any(m.get("content") == stored.result for m in request["messages"])

    # The trace API and the auditors' export carry the whole value; the chat page shows it folded.
    alice, otto = Client(), Client()
    alice.force_login(cast["alice"])
    otto.force_login(cast["otto"])
    trace = alice.get(f"/api/runs/{run.pk}/trace").json()
    assert [c["result"] for c in trace["tool_calls"]] == [stored.result]
    exported = [json.loads(line) for line in otto.get("/audit/export.jsonl").getvalue().decode().splitlines()]
    assert [c["result"] for line in exported for c in line["tool_calls"]] == [stored.result]
    page = alice.get(f"/c/{run.conversation_id}/").content.decode()
    assert result[:1000] in page and REF_PREFIX not in page and "$blob" not in page

    # Rebuilt on resume: the state the next segment replays to the model holds the whole result.
    state = load_run_context(run.pk).state
    assert [c.result for c in state.calls.values()] == [stored.result]

    # The audit chain pinned the whole value's digest, and the check recomputes it through the blob.
    assert verify_chain().ok
    call_command("verify_audit")


@postgres_only
def test_a_1_mb_argument_is_stored_once_raw_and_parsed(cast):
    content = big_text()
    run = new_run(cast["alice"])
    toolbox = FuncToolbox({"write": (info("write", {"content": {"type": "string"}}), returning("ok"))})
    drive(run, one_call_then_answer("write", {"content": content}), toolbox, ROOMY)

    sizes = stored_bytes(run.pk)
    assert sum(sizes.values()) < 1.5 * MB, sizes  # was 11.0 MB
    response = Round.objects.get(run=run, index=0).response
    (stored_call,) = response["choices"][0]["tool_calls"]
    assert stored_call["arguments"] == {"content": content}  # parsed again from the raw text on load
    assert json.loads(stored_call["arguments_raw"]) == {"content": content}
    assert json.loads(ToolCall.objects.get(run=run).arguments) == {"content": content}
    assert verify_chain().ok


def test_an_edited_large_value_is_named_by_verify_audit(cast):
    run = finished_with_result(cast["alice"], big_text(50_000))
    Blob.objects.update(data="edited in the database")
    result = verify_chain()
    assert not result.ok and result.broken.problem == "content_mismatch", result.broken
    assert (
        f"run {run.pk} tool call 0/0" in result.broken.detail
        or f"run {run.pk} round 1" in result.broken.detail
    )
    with pytest.raises(CommandError, match="content edited"):
        call_command("verify_audit")


def test_a_blob_only_events_refer_to_is_checked_against_its_address(cast):
    text = big_text(20_000)
    run = new_run(cast["alice"])
    RunEvent.objects.create(run=run, seq=1, type="tool_progress", payload={"message": text})
    assert verify_chain().ok
    Blob.objects.update(data=text[::-1])
    result = verify_chain()
    assert not result.ok and result.broken.problem == "blob_mismatch", result.broken


def test_values_that_look_like_references_are_stored_and_read_verbatim(cast):
    other = big_text(20_000)
    run = new_run(cast["alice"])
    ToolCall.objects.create(run=run, round_index=0, index=0, call_id="x", name="t", arguments=other)
    key = Blob.objects.get().sha256
    # What a hostile model or tool could send to make a reader fetch someone else's stored value.
    posing_text = REF_PREFIX + key
    posing_json = {"$blob": key, "chars": 20_000, "nested": [{"$esc": {"$blob": key, "chars": 1}}]}
    parsed_marker = {"arguments_raw": "{}", "arguments": {"$parsed": "arguments_raw"}}
    call = ToolCall.objects.create(
        run=run, round_index=0, index=1, call_id="y", name="t", arguments=posing_text, result=ESC_PREFIX + "x"
    )
    event = RunEvent.objects.create(
        run=run, seq=1, type="tool_call", payload={"a": posing_json, "b": parsed_marker}
    )
    call.refresh_from_db()
    event.refresh_from_db()
    assert (call.arguments, call.result) == (posing_text, ESC_PREFIX + "x")
    assert event.payload == {"a": posing_json, "b": parsed_marker}


@postgres_only
def test_rows_in_the_format_before_large_values_were_shared_still_load(cast):
    """Frozen rows: what the previous format wrote (the whole value inline), written with plain SQL."""
    text = big_text(30_000)
    run = new_run(cast["alice"])
    call = ToolCall.objects.create(run=run, round_index=0, index=0, call_id="c", name="t")
    event = RunEvent.objects.create(run=run, seq=1, type="tool_call", payload={})
    payload = {
        "v": 1,
        "round_index": 0,
        "index": 0,
        "call_id": "c",
        "name": "t",
        "status": "succeeded",
        "arguments": "{}",
        "result": text,
    }
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chatapp_toolcall SET result = %s WHERE id = %s", [text, call.pk])
        cursor.execute(
            "UPDATE chatapp_runevent SET payload = %s::jsonb WHERE id = %s", [json.dumps(payload), event.pk]
        )
    assert ToolCall.objects.get(pk=call.pk).result == text
    assert RunEvent.objects.get(pk=event.pk).payload == payload
    assert not Blob.objects.exists() and referenced_by_run(run.pk) == set()


def test_the_auditors_search_finds_text_inside_a_large_argument(cast):
    needle = "needle-" + big_text(12)
    run = new_run(cast["alice"])
    arguments = json.dumps({"content": big_text(20_000) + needle})
    ToolCall.objects.create(run=run, round_index=0, index=0, call_id="c", name="write", arguments=arguments)
    assert Blob.objects.count() == 1  # stored once, by reference
    otto = Client()
    otto.force_login(cast["otto"])
    page = otto.get("/audit/", {"q": needle}).content.decode()
    assert f"/audit/runs/{run.pk}/" in page
    assert f"/audit/runs/{run.pk}/" not in otto.get("/audit/", {"q": "absent-" + needle}).content.decode()


def test_the_trace_log_names_a_large_result_without_repeating_it():
    from chatapp.worker.trace_log import structured

    result = big_text(MB)
    line = structured(
        1, 7, "tool_call", {"name": "fetch", "status": "succeeded", "arguments": "{}", "result": result}
    )
    record = json.loads(line)
    assert len(line) < 10_000 and record["result"].startswith(result[:2000])
    assert "1,000,000 bytes in all" in record["result"] and record["arguments"] == "{}"


@postgres_only
def test_a_long_answer_is_stored_once_besides_its_streamed_frames_and_still_found(cast):
    answer = big_text(200_000)
    run = new_run(cast["alice"])
    drive(run, ScriptedProvider(lambda request: reply(answer)), FuncToolbox({}), ROOMY)
    run.refresh_from_db()
    assert run.final_text == answer
    sizes = stored_bytes(run.pk)
    # The answer's message (content and payload), the run's final text and its run_finished event
    # share one blob; the streamed delta frames keep their own pieces of it (the page replays them).
    # Before: 1.2 MB (the events, the round's response, the message twice); now 0.41 MB.
    assert sum(sizes.values()) < 2.2 * len(answer), sizes
    message = Message.objects.get(run=run, role="assistant")
    assert message.content == answer and message.payload["content"] == answer
    needle = answer[150_000:150_040]
    alice, otto = Client(), Client()
    alice.force_login(cast["alice"])
    otto.force_login(cast["otto"])
    assert f"/c/{run.conversation_id}/" in alice.get("/", {"q": needle}).content.decode()
    assert f"/audit/runs/{run.pk}/" in otto.get("/audit/", {"q": needle}).content.decode()
    assert verify_chain().ok


def test_the_admin_search_finds_text_inside_a_long_message(cast):
    run = new_run(cast["alice"])
    long_text = big_text(20_000)
    Message.objects.create(
        conversation=run.conversation, run=run, role="assistant", content=long_text, payload={}
    )
    admin = Client()
    admin.force_login(cast["ada"])
    page = admin.get("/admin/chatapp/message/", {"q": long_text[9_000:9_030]}).content.decode()
    assert long_text[:100] in page  # the excerpt of the one message found
    assert long_text[:100] not in admin.get("/admin/chatapp/message/", {"q": "absent words"}).content.decode()
