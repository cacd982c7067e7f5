"""The demo model answers in the language of the question (issue 12 item 7)."""

from __future__ import annotations

import re

from demo.model.script import plan_reply

CJK = re.compile(r"[\u3400-\u9fff]")


def body(text, tools=()):
    return {"model": "clearloop-demo", "messages": [{"role": "user", "content": text}], "tools": list(tools)}


def tool(name, props):
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }


def answer(text, tools=()):
    return "".join(plan_reply(body(text, tools)).text_pieces)


def test_a_chinese_question_gets_a_chinese_answer_and_an_english_one_an_english_answer():
    chinese = answer("你好，今天怎么样？")
    assert chinese.startswith("你好！我是 clearloop 的演示模型") and "你好，今天怎么样？" in chinese
    english = answer("How are you today?")
    assert english.startswith("Hello! I am the clearloop demo model") and not CJK.search(english)


def test_a_scenario_answers_in_the_language_it_was_asked_in():
    send = tool("send_message", {"phone_number": {"type": "string"}, "content": {"type": "string"}})
    for question, done in (
        ("给 13800000000 发送短信，内容是“你好”", "消息已发送。"),
        ("send a text message to 13800000000 saying “hi”", "The message was sent."),
    ):
        first = plan_reply(body(question, [send]))
        assert [c.arguments for c in first.tool_calls] == [
            {"phone_number": "13800000000", "content": "你好" if CJK.search(question) else "hi"}
        ]
        call_id = first.tool_calls[0].id if hasattr(first.tool_calls[0], "id") else "c1"
        history = {
            "model": "clearloop-demo",
            "tools": [send],
            "messages": [
                {"role": "user", "content": question},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": "send_message",
                                "arguments": '{"phone_number": "13800000000"}',
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": '{"ok": true}'},
            ],
        }
        assert "".join(plan_reply(history).text_pieces) == done
