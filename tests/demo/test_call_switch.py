"""``[[demo:call TOOL {json}]]``: the switch's parsing and decisions (pure)."""

from demo.model.call import CallSwitch, parse_switches
from demo.model.script import plan_reply


def tool(name):
    return {"type": "function", "function": {"name": name, "description": name,
                                             "parameters": {"type": "object", "properties": {}}}}


def body(text, tools=(), extra=(), **more):
    return {"model": "clearloop-demo", "messages": [{"role": "user", "content": text}, *extra],
            "tools": list(tools), **more}


def answered(name, content, call_id="c1", arguments="{}"):
    return [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def test_arguments_are_read_as_json_even_when_they_contain_closing_brackets():
    text = 'please [[demo:call write_file {"path": "a]].txt", "content": "x ]] y"}]] now'
    assert parse_switches(text) == [CallSwitch("write_file", {"path": "a]].txt", "content": "x ]] y"})]


def test_no_arguments_means_an_empty_object_and_broken_json_is_sent_verbatim():
    assert parse_switches("[[demo:call geo__ping]]") == [CallSwitch("geo__ping", {})]
    assert parse_switches('[[demo:call a {"x": tru]]') == [CallSwitch("a", '{"x": tru')]


def test_first_round_is_exactly_the_asked_call_with_a_namespaced_mcp_name():
    text = '[[demo:call env_query__get_environment_status {"area_code": "Z9", "extra": [1, 2]}]]'
    plan = plan_reply(body(text, [tool("env_query__get_environment_status"), tool("read_file")]))
    assert [(c.name, c.arguments) for c in plan.tool_calls] == [
        ("env_query__get_environment_status", {"area_code": "Z9", "extra": [1, 2]})]
    assert plan.finish_reason == "tool_calls" and not plan.text_pieces


def test_the_call_is_made_even_when_not_offered_and_other_switches_wait():
    plan = plan_reply(body("[[demo:call delete_everything {}]] [[demo:loop]]", [tool("read_file")]))
    assert [c.name for c in plan.tool_calls] == ["delete_everything"]


def test_two_switches_are_two_parallel_calls():
    plan = plan_reply(body('[[demo:call a {"n": 1}]] and [[demo:call b {"n": 2}]]', [tool("a"), tool("b")]))
    assert [(c.name, c.arguments) for c in plan.tool_calls] == [("a", {"n": 1}), ("b", {"n": 2})]


def test_after_the_result_one_sentence_summarises_it_and_no_second_call():
    result = '[Tool "read_file" ran successfully. Its raw output follows.]\n{"content": "hello world", "lines": 1}'
    plan = plan_reply(body('[[demo:call read_file {"path": "x"}]]', [tool("read_file")],
                           answered("read_file", result)))
    text = "".join(plan.text_pieces)
    assert not plan.tool_calls
    assert text == 'I called read_file and it returned: {"content": "hello world", "lines": 1}.'


def test_a_failed_call_is_summarised_with_its_error():
    failure = '{"success": false, "error": "path escapes the workspace"}'
    plan = plan_reply(body('[[demo:call read_file {"path": "../x"}]]', [tool("read_file")],
                           answered("read_file", failure)))
    assert "".join(plan.text_pieces) == "I called read_file and it failed: path escapes the workspace."


def test_tools_switched_off_gets_text():
    plan = plan_reply(body("[[demo:call read_file {}]]", [tool("read_file")], tool_choice="none"))
    assert not plan.tool_calls and plan.text_pieces
