"""The seed 000 §6 three-round files scenario, as the emulated models play it and as tools answer it.

Round 1: read_file(config.yaml) + search_files(*.md) in parallel; round 2: write_file(report.md)
built from the two results; round 3: the final answer. Which round a request is in is decided from
its history alone (how many tool results follow the last user message), so a resumed run gets
the same answers as an uninterrupted one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.messages import Message, ToolSpec
from agent.toolbox import ToolInfo, ToolOutcome

SEED = json.loads((Path(__file__).parent.parent / "loop" / "seed_000_6.json").read_text())
SEED_MESSAGES = SEED["request"]["messages"]
FINAL_TEXT = SEED["final_response"]["choices"][0]["message"]["content"]
TOOLS = [t["function"] for t in SEED["request"]["tools"]]


def round_calls(results_seen: int) -> list[tuple[str, str]] | None:
    """(name, arguments JSON) of the calls the model makes after ``results_seen`` tool results in
    this turn; None means the final answer."""
    if results_seen == 0:
        message = SEED_MESSAGES[2]
    elif results_seen == 2:
        message = SEED_MESSAGES[5]
    else:
        return None
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]


def reasoning_for(results_seen: int) -> str:
    """The model's visible reasoning for the round (Chinese, like the seed, to test UTF-8 paths)."""
    return {
        0: "用户要读取 config.yaml 并列出 Markdown 文件，这两步互不依赖，可以并行调用。",
        2: "两个结果都到了：提供商 agents，默认模型 Qwen3.6-Plus，3 个 Markdown 文件。现在写报告。",
    }.get(results_seen, "报告已写入，可以回答用户了。")


def start_messages() -> list[Message]:
    return [Message.system(SEED_MESSAGES[0]["content"]), Message.user(SEED_MESSAGES[1]["content"])]


class SeedFiles:
    """The seed's read_file / search_files / write_file, answering with the seed's results."""

    def __init__(self, padding: int = 0) -> None:
        self.written: dict[str, str] = {}
        self.executed: list[str] = []
        self.padding = padding  # extra characters in read_file's result, to grow the context

    async def list_tools(self) -> list[ToolInfo]:
        return [
            ToolInfo(
                spec=ToolSpec(t["name"], t["description"], t["parameters"]),
                risk="low" if t["name"] == "write_file" else "read_only",
            )
            for t in TOOLS
        ]

    async def execute(self, name: str, arguments: dict[str, Any], ctx: Any) -> ToolOutcome:
        self.executed.append(name)
        if name == "read_file":
            result = json.loads(SEED_MESSAGES[3]["content"])
            if self.padding:
                result["notes"] = "配置说明。" * (self.padding // 5)
            return ToolOutcome.success(result)
        if name == "search_files":
            return ToolOutcome.success(json.loads(SEED_MESSAGES[4]["content"]))
        self.written[arguments["path"]] = arguments["content"]
        size = len(arguments["content"].encode())
        return ToolOutcome.success({"success": True, "path": arguments["path"], "bytes_written": size})


def expected_report() -> str:
    return json.loads(SEED_MESSAGES[5]["tool_calls"][0]["function"]["arguments"])["content"]
