"""The demo model's decisions (pure) and its HTTP faults (in-process ASGI transport)."""

import json

import httpx

from demo.model import DemoModelSettings, create_app
from demo.model.script import plan_reply


def tool(name, props=None, required=()):
    params = {"type": "object", "properties": props or {"x": {"type": "string"}}, "required": list(required)}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": params}}


def body(text, tools=(), extra=()):
    return {
        "model": "clearloop-demo",
        "messages": [{"role": "user", "content": text}, *extra],
        "tools": list(tools),
    }


def test_plain_text_is_an_echo_labelled_as_demo():
    plan = plan_reply(body("hello"))
    assert "demo model" in "".join(plan.text_pieces) and not plan.tool_calls


def test_namespaced_mcp_tools_are_matched_by_suffix():
    tools = [
        tool("env_query__get_environment_status", {"area_code": {"type": "string"}}),
        tool(
            "geo__simulate_geolocation",
            {"lat": {"type": "number"}, "lng": {"type": "number"}, "radius": {"type": "number"}},
        ),
    ]
    plan = plan_reply(body("What is the environment like in B2002?", tools))
    assert [c.name for c in plan.tool_calls] == [
        "env_query__get_environment_status",
        "geo__simulate_geolocation",
    ]
    assert plan.tool_calls[0].arguments == {"area_code": "B2002"}


def test_arguments_are_fitted_to_the_offered_schema():
    tools = [
        tool("read_file", {"path": {"type": "string"}}),
        tool("search_files", {"pattern": {"type": "string"}}),
    ]
    plan = plan_reply(body("read config.yaml and list .md files", tools))
    assert [c.arguments for c in plan.tool_calls] == [{"path": "config.yaml"}, {"pattern": "*.md"}]


def test_decides_from_history_and_answers_after_results():
    tools = [tool("query_database", {"sql": {"type": "string"}, "limit": {"type": "integer"}})]
    first = plan_reply(body("the two newest users", tools))
    assert first.tool_calls[0].arguments["sql"].startswith("SELECT id, name, created_at FROM users")
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "query_database", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": '[Tool "query_database" ran successfully. Its raw output follows.]\n'
            '{"rows": [{"id": 2, "name": "Bo"}, {"id": 1, "name": "Al"}]}',
        },
    ]
    second = plan_reply(body("the two newest users", tools, history))
    assert not second.tool_calls and "name=Bo" in "".join(second.text_pieces)


def test_tool_choice_none_gets_text_even_mid_scenario():
    tools = [tool("query_database", {"sql": {"type": "string"}})]
    request = body("the two newest users", tools) | {"tool_choice": "none"}
    assert not plan_reply(request).tool_calls


def test_triggers_become_faults_and_behaviours():
    assert plan_reply(body("x [[demo:slow]] [[demo:429]]")).faults == {"slow", "429"}
    assert plan_reply(body("[[demo:length-text]]")).finish_reason == "length"
    assert plan_reply(body("[[demo:unknown-tool]]", [tool("a")])).tool_calls[0].name == "delete_everything"
    truncated = plan_reply(body("[[demo:truncate-args]]", [tool("write_file")]))
    assert truncated.finish_reason == "length"
    try:
        json.loads(truncated.tool_calls[0].arguments)
        raise AssertionError("arguments should be cut")
    except json.JSONDecodeError:
        pass


async def post(app, payload):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://demo") as client:
        return await client.post("/v1/chat/completions", json=payload)


async def test_429_fires_once_per_conversation_with_retry_after():
    app = create_app(DemoModelSettings(tokens_per_second=0))
    first = await post(app, body("hi [[demo:429]]"))
    assert first.status_code == 429 and first.headers["retry-after"] == "0"
    assert first.json()["error"]["code"] == "rate_limit_exceeded"
    assert (await post(app, body("hi [[demo:429]]"))).status_code == 200


async def test_fault_every_time_when_configured():
    app = create_app(DemoModelSettings(tokens_per_second=0, fault_once=False))
    for _ in range(2):
        response = await post(app, body("hi [[demo:context-overflow]]"))
        assert response.status_code == 400 and response.json()["error"]["code"] == "context_length_exceeded"
    assert (await post(app, body("hi [[demo:500]]"))).status_code == 500


async def test_n2_returns_two_choices_non_streaming():
    app = create_app(DemoModelSettings(tokens_per_second=0))
    data = (await post(app, body("[[demo:n2]]", [tool("send_message")]))).json()
    assert [c["index"] for c in data["choices"]] == [0, 1]
    assert data["choices"][1]["message"]["tool_calls"][0]["function"]["name"] == "send_message"


async def test_streaming_sends_every_choice_and_done():
    app = create_app(DemoModelSettings(tokens_per_second=0))
    response = await post(app, body("[[demo:n2]]", [tool("send_message")]) | {"stream": True})
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    indexes = {c["index"] for line in lines[:-1] for c in json.loads(line)["choices"]}
    assert indexes == {0, 1}


def test_an_attached_csv_is_read_then_reported_in_report_md():
    tools = [
        tool(
            "read_file",
            {"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
        ),
        tool("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}),
    ]
    text = (
        "Analyse it\n\n[The user attached 2 files to this message; they are in the workspace, readable with "
        "the file tools: chart.png (1,234 bytes), sales.csv (30 bytes)]"
    )
    first = plan_reply(body(text, tools))
    assert [(c.name, c.arguments["path"]) for c in first.tool_calls] == [("read_file", "sales.csv")]
    read = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": '[Tool "read_file" ran successfully. Its raw output follows.]\n'
            + json.dumps({"success": True, "content": "region,total\nnorth,42\nsouth,7"}),
        },
    ]
    second = plan_reply(body(text, tools, read))
    [write] = second.tool_calls
    assert write.arguments["path"] == "report.md"
    assert (
        "2 rows, columns: region, total" in write.arguments["content"]
        and "sum 49" in write.arguments["content"]
    )


def test_an_image_part_is_acknowledged():
    content = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    plan = plan_reply({"model": "clearloop-demo", "messages": [{"role": "user", "content": content}]})
    assert "I received 1 image(s): image/png" in "".join(plan.text_pieces)


def test_the_attachment_note_starts_no_sms_or_sql_scenario():
    tools = [
        tool("send_message", {"phone_number": {"type": "string"}, "content": {"type": "string"}}),
        tool("query_database", {"sql": {"type": "string"}}),
    ]
    text = "hello\n\n[The user attached 1 file to this message; they are in the workspace, readable with the file tools: a.png (9 bytes)]"
    assert not plan_reply(body(text, tools)).tool_calls


def test_history_says_which_questions_the_request_held():
    request = {
        "model": "clearloop-demo",
        "messages": [
            {"role": "system", "content": "be nice"},
            {"role": "user", "content": "apples"},
            {"role": "assistant", "content": "about apples"},
            {"role": "user", "content": "plums [[demo:history]]\n\n[The user attached 1 file to this message; "
             "it is in the workspace: sales.csv (12 bytes)]"},
        ],
    }
    assert "".join(plan_reply(request).text_pieces) == "The questions I was sent: apples | plums"
