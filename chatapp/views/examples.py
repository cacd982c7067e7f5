"""The seed scenarios, offered as example prompts on the home page in demo mode (README, "Try the
seeds' scenarios"): each exercises one part of the trace with the demo model."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True, slots=True)
class Example:
    title: str | Promise  # translated when the page renders
    prompt: str | Promise


SCENARIOS = (
    Example(
        _("Files: two parallel reads, then a write"),
        "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。",
    ),
    Example(_("SQL: a read-only query"), "查询最新注册的两个用户"),
    Example(_("MCP: two servers (stdio and HTTP)"), "查询地区环境状态并模拟定位"),
    # The demo model answers in the language of the question: this prompt follows the UI's.
    Example(
        _("Approval: a high-risk tool waits for an admin"),
        _("send a text message to 13800000000 saying “hi”"),
    ),
)


def examples() -> tuple[Example, ...]:
    return SCENARIOS if settings.DEMO_MODE else ()
