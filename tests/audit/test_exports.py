"""Exports: JSONL for the current filter, OpenTelemetry GenAI JSON for a run; each one audited."""

from __future__ import annotations

import json

import pytest

from chatapp.audit import verify_chain
from chatapp.audit.otel import span_id, trace_id
from chatapp.models import AuditEvent, ProviderConfig
from tests.audit.conftest import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(cast):
    return [
        make_run(cast["alice"], text="first", tools=(("sql_query", '{"sql": "select 1"}', "1"),)),
        make_run(cast["bob"], text="second", final_text="key sk-test-ZZZZZZZZZZZZZZZZZZZZ"),
        make_run(cast["alice"], text="third", provider="openai", status="failed"),
    ]


def _lines(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    assert body.endswith("\n")
    return [json.loads(line) for line in body.splitlines()]


def test_jsonl_has_one_trace_per_line_for_the_filter(client_for, runs):
    response = client_for("otto").get("/audit/export.jsonl?user=alice")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in response["Content-Disposition"]
    lines = _lines(response)
    assert {line["run_id"] for line in lines} == {runs[0].pk, runs[2].pk}
    first = next(line for line in lines if line["run_id"] == runs[0].pk)
    assert first["rounds"][0]["request"]["messages"][0]["content"] == "first"
    assert first["tool_calls"][0]["name"] == "sql_query"
    assert first["events"][0]["type"] == "run_started"


def test_jsonl_of_everything_is_redacted(client_for, runs):
    lines = _lines(client_for("ada").get("/audit/export.jsonl"))
    assert len(lines) == 3
    assert "sk-test" not in json.dumps(lines)


def test_every_export_is_recorded_with_who_what_and_how_many(client_for, runs):
    b"".join(client_for("otto").get("/audit/export.jsonl?user=alice&status=failed").streaming_content)
    client_for("ada").get(f"/audit/runs/{runs[0].pk}/otel.json")
    jsonl, otel = AuditEvent.objects.filter(kind="export").order_by("seq")
    assert jsonl.actor == "otto" and jsonl.run_id is None
    assert jsonl.payload == {"format": "jsonl", "filter": {"user": "alice", "status": "failed"}, "runs": 1}
    assert otel.actor == "ada" and otel.run_id == runs[0].pk
    assert otel.payload == {"format": "otel", "filter": {"run": str(runs[0].pk)}, "runs": 1}
    assert verify_chain().ok


def test_an_invalid_filter_exports_nothing_and_records_nothing(client_for, runs):
    response = client_for("otto").get("/audit/export.jsonl?date_from=bogus")
    assert response.status_code == 400
    assert not AuditEvent.objects.filter(kind="export").exists()


def _attrs(span: dict) -> dict:
    out = {}
    for a in span["attributes"]:
        ((kind, v),) = a["value"].items()
        out[a["key"]] = [next(iter(x.values())) for x in v["values"]] if kind == "arrayValue" else v
    return out


def test_otel_export_structure_and_genai_attributes(client_for, cast):
    ProviderConfig.objects.update_or_create(
        name="demo", defaults={"base_url": "http://127.0.0.1:1/v1", "model": "demo-model", "preset": "demo"}
    )
    run = make_run(
        cast["alice"],
        tools=(("sql_query", '{"sql": "select 1"}', "1"), ("mcp__fetch", "{}", "boom")),
        approver=cast["ada"],
    )
    response = client_for("otto").get(f"/audit/runs/{run.pk}/otel.json")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    data = response.json()
    (resource_spans,) = data["resourceSpans"]
    assert {"key": "service.name", "value": {"stringValue": "clearloop"}} in resource_spans["resource"][
        "attributes"
    ]
    (scope_spans,) = resource_spans["scopeSpans"]
    assert scope_spans["scope"]["name"] == "clearloop.audit"
    spans = scope_spans["spans"]
    assert [s["name"] for s in spans] == [
        "invoke_agent clearloop",
        "chat demo-model",
        "execute_tool sql_query",
        "execute_tool mcp__fetch",
    ]
    root, chat, tool, _ = spans
    assert {s["traceId"] for s in spans} == {trace_id(run.pk)} and len(trace_id(run.pk)) == 32
    assert len({s["spanId"] for s in spans}) == 4 and all(len(s["spanId"]) == 16 for s in spans)
    assert "parentSpanId" not in root and root["spanId"] == span_id(run.pk)
    assert chat["parentSpanId"] == tool["parentSpanId"] == root["spanId"]
    assert _attrs(root)["gen_ai.operation.name"] == "invoke_agent"

    chat_attrs = _attrs(chat)
    assert chat_attrs["gen_ai.operation.name"] == "chat"
    assert chat_attrs["gen_ai.provider.name"] == "demo"
    assert chat_attrs["gen_ai.request.model"] == "demo-model"
    assert chat_attrs["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert chat_attrs["gen_ai.usage.input_tokens"] == "12"  # OTLP/JSON carries 64-bit ints as strings
    assert chat_attrs["gen_ai.usage.output_tokens"] == "5"
    assert chat_attrs["gen_ai.response.id"] == "resp-1"
    assert int(chat["endTimeUnixNano"]) - int(chat["startTimeUnixNano"]) == 120_500_000

    tool_attrs = _attrs(tool)
    assert tool_attrs["gen_ai.operation.name"] == "execute_tool"
    assert tool_attrs["gen_ai.tool.name"] == "sql_query"
    assert tool_attrs["gen_ai.tool.call.id"].startswith("call_")
    assert tool["events"][0]["name"] == "clearloop.approval"

    again = client_for("otto").get(f"/audit/runs/{run.pk}/otel.json").json()
    assert again == data  # ids and content are deterministic


def test_otel_marks_a_failed_run_and_a_failed_tool_as_errors(client_for, cast):
    from chatapp.models import Run, ToolCall

    run = make_run(cast["alice"], status="failed", tools=(("sql_query", "{}", "no such table"),))
    Run.objects.filter(pk=run.pk).update(error_class="ProviderError", error="upstream 500")
    ToolCall.objects.filter(run=run).update(status="failed", is_error=True, error_code="tool_error")
    spans = (
        client_for("otto")
        .get(f"/audit/runs/{run.pk}/otel.json")
        .json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
    )
    root, _, tool = spans
    assert root["status"] == {"code": 2, "message": "upstream 500"}
    assert _attrs(root)["error.type"] == "ProviderError"
    assert tool["status"]["code"] == 2 and _attrs(tool)["error.type"] == "tool_error"
