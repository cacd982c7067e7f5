"""Text replies of the demo model."""

from __future__ import annotations

import re

from demo.model.history import Turn
from demo.model.plan import Plan

_WORD = re.compile(r"\S+\s*|\s+")


def split_tokens(text: str) -> tuple[str, ...]:
    """Split text into word-sized pieces that concatenate back to exactly ``text``."""
    return tuple(_WORD.findall(text))


def say(turn: Turn, chinese: str, english: str, finish: str = "stop") -> Plan:
    return Plan(text_pieces=split_tokens(chinese if turn.cjk else english), finish_reason=finish)


def echo(turn: Turn) -> Plan:
    """The answer to anything no scenario knows, in the language of the question."""
    said = turn.user_text.strip()
    quoted = said if len(said) <= 200 else said[:200] + "…"
    text = _echo_chinese(turn, quoted) if turn.cjk else _echo_english(turn, quoted)
    return Plan(text_pieces=split_tokens(text), finish_reason="stop")


def _echo_english(turn: Turn, quoted: str) -> str:
    return (
        "Hello! I am the clearloop demo model, a scripted stand-in for a real LLM. "
        f"You said: “{quoted}”. "
        + (
            f"I received {len(turn.images)} image(s): {', '.join(turn.images)} (I cannot see them). "
            if turn.images
            else ""
        )
        + "I answer deterministically so that every step you see in the trace can be checked. "
        "Point clearloop at a real provider in the admin or with OPENAI_BASE_URL to chat with an LLM."
    )


def _echo_chinese(turn: Turn, quoted: str) -> str:
    return (
        "你好！我是 clearloop 的演示模型（demo model），用脚本代替真实的大语言模型。"
        f"你说的是：“{quoted}”。"
        + (
            f"我收到了 {len(turn.images)} 张图片：{'、'.join(turn.images)}（但我看不到内容）。"
            if turn.images
            else ""
        )
        + "我的回答是确定的，这样运行轨迹中的每一步都可以核对。"
        "要与真正的大语言模型对话，请在管理后台添加提供方，或设置 OPENAI_BASE_URL。"
    )
