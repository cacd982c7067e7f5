"""The seed scenarios, offered as example prompts on the home page in demo mode (README, "Try the
seeds' scenarios"): each exercises one part of the trace with the demo model."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True, slots=True)
class Example:
    title: str
    prompt: str


SCENARIOS = (
    Example(
        "Files: two parallel reads, then a write",
        "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。",
    ),
    Example("SQL: a read-only query", "查询最新注册的两个用户"),
    Example("MCP: two servers (stdio and HTTP)", "查询地区环境状态并模拟定位"),
    Example("Approval: a high-risk tool waits for an admin", "send a text message to 13800000000 saying hi"),
)


def examples() -> tuple[Example, ...]:
    return SCENARIOS if settings.DEMO_MODE else ()
