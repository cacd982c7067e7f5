"""The recorded fixtures, turned into HTTP bodies, with what each must assemble into.

Framing (PROVENANCE.md): ``*.sse`` and the recorded HTTP bodies are served byte for byte.
``*.jsonl`` lost its SSE framing at capture; it is re-framed the way vercel's replay helper does
(``data: <line>\\n\\n``; Anthropic and Responses also get the ``event:`` line, whose name equals the
payload's ``type``). ``*.data-lines.txt`` were pasted without blank separators; they get one each.
No ``[DONE]`` is added where the capture has none: those replays exercise "EOF is a terminator".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path("/work/shared/fixtures/providers")


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def frame_jsonl(lines: list[str], *, with_event: bool) -> bytes:
    out = []
    for line in lines:
        event = f"event: {json.loads(line)['type']}\n" if with_event else ""
        out.append(f"{event}data: {line}\n\n")
    return "".join(out).encode()


def jsonl_lines(name: str) -> list[str]:
    return [line for line in read(name).decode().splitlines() if line.strip()]


def data_lines(name: str) -> bytes:
    lines = [line for line in read(name).decode().splitlines() if line.strip()]
    return "".join(f"{line}\n\n" for line in lines).encode()


def anthropic_exchanges(name: str) -> list[dict[str, Any]]:
    return json.loads(read(name))


def cassette(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load(read(name))["interactions"]


def responses_jsonl_streams() -> list[bytes]:
    """The vercel Responses fixture holds four consecutive streams, each restarting at sequence 0."""
    streams: list[list[str]] = []
    for line in jsonl_lines("openai_responses_stream_reasoning_then_function_calls.jsonl"):
        if json.loads(line)["type"] == "response.created":
            streams.append([])
        streams[-1].append(line)
    return [frame_jsonl(s, with_event=True) for s in streams]


@dataclass
class Call:
    id: str
    name: str
    arguments: dict[str, Any] | None
    truncated: bool = False


@dataclass
class Case:
    id: str
    kind: str
    preset: str
    body: bytes
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    finish: str = "stop"
    finish_raw: str | None = "stop"
    usage: dict[str, int | None] = field(default_factory=dict)
    response_id: str | None = None
    model: str | None = None
    reasoning_prefix: str = ""
    refusal: str | None = None


# A table of every recording, as data rather than a function body.
chat, responses, anthropic = "openai_chat", "openai_responses", "anthropic"
exchanges = anthropic_exchanges("anthropic_http_stream_tool_use_roundtrip.json")
interactions = cassette("openai_responses_http_stream_function_call_roundtrip.cassette.yaml")
steps = responses_jsonl_streams()
calc = "calculator"
CASES = [
    Case(
        "openai_chat_stream_parallel_tool_calls",
        chat,
        "openai",
        read("openai_chat_stream_parallel_tool_calls.sse"),
        calls=[
            Call(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                {"city": "Edinburgh", "country": "GB", "units": "c"},
            ),
            Call(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                {"ticker": "AAPL", "exchange": "NASDAQ"},
            ),
        ],
        finish="tool_calls",
        finish_raw="tool_calls",
        usage={"prompt_tokens": 149, "completion_tokens": 60, "total_tokens": 209, "reasoning_tokens": 0},
        response_id="chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63",
        model="gpt-4o-2024-08-06",
    ),
    Case(
        "openai_chat_stream_finish_length",
        chat,
        "openai",
        read("openai_chat_stream_finish_length.sse"),
        text='{"',
        finish="length",
        finish_raw="length",
        usage={"prompt_tokens": 79, "completion_tokens": 1, "total_tokens": 80},
        response_id="chatcmpl-ABfw3Oqj8RD0z6aJiiX37oTjV2HFh",
        model="gpt-4o-2024-08-06",
    ),
    Case(
        "openai_chat_stream_refusal",
        chat,
        "openai",
        read("openai_chat_stream_refusal.sse"),
        refusal="I'm sorry, I can't assist with that request.",
        finish="content_filter",
        finish_raw="stop",
        usage={"prompt_tokens": 79, "completion_tokens": 11, "total_tokens": 90},
        response_id="chatcmpl-ABfw4IfQfCCrcuybFm41wJyxjbkz7",
    ),
    Case(
        "deepseek_chat_stream_reasoning_tool_call",
        chat,
        "deepseek",
        frame_jsonl(jsonl_lines("deepseek_chat_stream_reasoning_tool_call.jsonl"), with_event=False),
        calls=[Call("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", {"location": "San Francisco"})],
        finish="tool_calls",
        finish_raw="tool_calls",
        reasoning_prefix="The user is asking for the weather",
        usage={
            "prompt_tokens": 339,
            "completion_tokens": 83,
            "total_tokens": 422,
            "cached_tokens": 320,
            "reasoning_tokens": 39,
        },
        response_id="cca85624-4056-401f-b220-d77601d1f70d",
        model="deepseek-reasoner",
    ),
    Case(
        "qwen_dashscope_chat_stream_tool_call",
        chat,
        "qwen",
        frame_jsonl(jsonl_lines("qwen_dashscope_chat_stream_tool_call.jsonl"), with_event=False),
        calls=[Call("call_eee11723464a4b9eb8cee71d", "weather", {"location": "San Francisco"})],
        finish="tool_calls",
        finish_raw="tool_calls",
        usage={"prompt_tokens": 295, "completion_tokens": 22, "total_tokens": 317, "cached_tokens": 0},
        response_id="chatcmpl-8e243c57-23b3-9db2-a02e-e3c53929c368",
        model="qwen3-max",
    ),
    Case(
        "vllm_chat_stream_tool_call",
        chat,
        "vllm",
        data_lines("vllm_chat_stream_tool_call.data-lines.txt"),
        calls=[Call("chatcmpl-tool-ca99dda515524c6abe47d1ea22813507", "run_command", {"command": "ls"})],
        finish="tool_calls",
        finish_raw="tool_calls",
        usage={"prompt_tokens": None},
        response_id="chatcmpl-d0c68c86be0641129cffa5053c0c217e",
        model=None,
    ),
    Case(
        "ollama_chat_stream_parallel_tool_calls",
        chat,
        "ollama",
        data_lines("ollama_chat_stream_parallel_tool_calls.data-lines.txt"),
        calls=[
            Call("call_wteop8bt", "run_command", {"command": "ls"}),
            Call("call_rk2xye1l", "run_command", {"command": "ls -l"}),
        ],
        finish="tool_calls",
        finish_raw="tool_calls",
        response_id="chatcmpl-18",
        model="qwen2.5-coder:7b-instruct-q8_0",
    ),
    Case(
        "openai_responses_cassette_function_call",
        responses,
        "openai_responses",
        interactions[0]["response"]["body"]["string"].encode(),
        calls=[Call("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", {"country": "France"})],
        finish="tool_calls",
        finish_raw="completed",
        usage={"prompt_tokens": 255, "completion_tokens": 16, "total_tokens": 271, "cached_tokens": 0},
        response_id="resp_67e554a155508191900ee113293c4c830794405d35281ae2",
        model="gpt-4o-2024-08-06",
    ),
    Case(
        "openai_responses_cassette_text",
        responses,
        "openai_responses",
        interactions[1]["response"]["body"]["string"].encode(),
        text="The capital of France is Paris.",
        finish="stop",
        finish_raw="completed",
        usage={"prompt_tokens": 278, "completion_tokens": 9, "total_tokens": 287},
        response_id="resp_67e554a21aa88191b65876ac5e5bbe0406c52f0e511c76ed",
    ),
    Case(
        "openai_responses_jsonl_step1_reasoning_then_call",
        responses,
        "openai_responses",
        steps[0],
        calls=[Call("call_AB6AaRZ1FYZB2RwS6A5vbdqn", calc, {"a": 12, "b": 7, "op": "add"})],
        finish="tool_calls",
        finish_raw="completed",
        reasoning_prefix="**Calculating step-by-step",
        usage={"prompt_tokens": 134, "completion_tokens": 28, "total_tokens": 162},
        response_id="resp_01830d662ab3856501693c321345c88190b0de00f3b9975691",
        model="gpt-5.1-codex-max",
    ),
    Case(
        "openai_responses_jsonl_step2",
        responses,
        "openai_responses",
        steps[1],
        calls=[Call("call_Q6pW65MUgW9vF59BmItYGos3", calc, {"a": 19, "b": 3, "op": "multiply"})],
        finish="tool_calls",
        finish_raw="completed",
        usage={"total_tokens": 247},
    ),
    Case(
        "openai_responses_jsonl_step3",
        responses,
        "openai_responses",
        steps[2],
        calls=[Call("call_Zl5vIMnD7dVAjgU6FkhmiCZh", calc, {"a": 57, "b": 10, "op": "multiply"})],
        finish="tool_calls",
        finish_raw="completed",
        usage={"total_tokens": 286},
    ),
    Case(
        "openai_responses_jsonl_step4_text",
        responses,
        "openai_responses",
        steps[3],
        text="The final result is **570**.",
        finish="stop",
        finish_raw="completed",
        usage={"total_tokens": 311},
    ),
    Case(
        "anthropic_stream_text_then_tool_use",
        anthropic,
        "anthropic",
        read("anthropic_stream_text_then_tool_use.sse"),
        text="I'll check the current weather in Paris for you.",
        calls=[Call("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {"location": "Paris"})],
        finish="tool_calls",
        finish_raw="tool_use",
        usage={"prompt_tokens": 377, "completion_tokens": 65},
        response_id="msg_019Q1hrJbZG26Fb9BQhrkHEr",
        model="claude-sonnet-4-20250514",
    ),
    Case(
        "anthropic_stream_max_tokens_mid_tool_input",
        anthropic,
        "anthropic",
        read("anthropic_stream_max_tokens_mid_tool_input.sse"),
        text="I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file "
        "called taxes.txt. Let me do that for you now.",
        calls=[Call("toolu_01EKqbqmZrGRXy18eN7m9kvY", "make_file", None, truncated=True)],
        finish="length",
        finish_raw="max_tokens",
        usage={"prompt_tokens": 450, "completion_tokens": 124},
        response_id="msg_01UdjYBBipA9omjYhicnevgq",
    ),
    Case(
        "anthropic_stream_tool_use_no_args",
        anthropic,
        "anthropic",
        frame_jsonl(jsonl_lines("anthropic_stream_tool_use_no_args.jsonl"), with_event=True),
        text="I'll update the issue list for you.",
        calls=[Call("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", {})],
        finish="tool_calls",
        finish_raw="tool_use",
        usage={"prompt_tokens": 565, "completion_tokens": 48},
    ),
    Case(
        "anthropic_http_roundtrip_tool_use",
        anthropic,
        "anthropic",
        exchanges[0]["response"]["body"].encode(),
        calls=[
            Call(
                "toolu_018acGYLtfR52q9yDbWaEdQZ",
                "get_weather",
                {"location": "San Francisco, CA", "units": "f"},
            )
        ],
        finish="tool_calls",
        finish_raw="tool_use",
        usage={
            "prompt_tokens": 656,
            "completion_tokens": 74,
            "total_tokens": 730,
            "cached_tokens": 0,
            "cache_write_tokens": 0,
        },
        model="claude-haiku-4-5-20251001",
    ),
    Case(
        "anthropic_http_roundtrip_text",
        anthropic,
        "anthropic",
        exchanges[1]["response"]["body"].encode(),
        text="The weather in San Francisco, CA is currently:\n- **Temperature:** 68°F\n- **Condition:** Sunny"
        "\n\nIt's a nice sunny day!",
        finish="stop",
        finish_raw="end_turn",
        usage={"prompt_tokens": 770, "completion_tokens": 38},
    ),
]

CASES_BY_ID = {case.id: case for case in CASES}
