"""English texts stored by the worker and the buttons, shown in the reader's language
(chatapp/stored_texts.py): one case per listed text or template, a check that every one still comes
from the code that stores it, and that English and unknown texts come back unchanged."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.utils import translation

from chatapp import stored_texts
from chatapp.stored_texts import shown

ROOT = Path(__file__).resolve().parents[2]

# (stored English, what a Chinese reader sees): one per FIXED text and per TEMPLATE.
CASES = [
    ("Stopped by the user.", "已由用户停止。"),
    ("The run was stopped by the user.", "运行已由用户停止。"),
    ("Allowed once in the chat", "已在对话中允许一次"),
    ("Denied in the chat", "已在对话中拒绝"),
    ("your quota", "你的配额"),
    ("the stream ended before message_stop", "流在 message_stop 之前结束"),
    (
        "the stream ended before response.completed or response.incomplete",
        "流在 response.completed 或 response.incomplete 之前结束",
    ),
    ("the stream ended without any choice", "流结束时没有任何 choice"),
    ("the stream ended before a finish_reason or [DONE]", "流在 finish_reason 或 [DONE] 之前结束"),
    ("the response body is not a JSON object", "响应体不是 JSON 对象"),
    ("the provider stream ended without a response", "提供方的流结束时没有响应"),
    (
        "timed out: the response took longer than the total timeout (not retried: the provider may have "
        "billed it; raise the provider's total timeout for longer answers)",
        "超时：响应时间超过了总超时（未重试：提供方可能已经计费；如需更长的回答，请调高该提供方的总超时）",
    ),
    (
        "the run holds preserved thinking blocks, and compressing anything before them would invalidate "
        "them (Anthropic preserved thinking); start a new conversation or turn thinking off",
        "该运行包含需保留的思考块，压缩其之前的任何内容都会使其失效（Anthropic 保留思考）；请开始新对话或关闭思考",
    ),
    (
        "The run was started 5 times and never finished (its worker kept dying); it was stopped so it "
        "cannot take more workers down.",
        "该运行已启动 5 次，始终未能完成（其工作进程不断崩溃）；已将其停止，以免拖垮更多工作进程。",
    ),
    (
        "The daily token budget is used up: 1,234 tokens today, the limit is 1,000 tokens (your quota). "
        "It resets at midnight (UTC).",
        "每日 Token 预算已用完：今天已用 1,234 Token，上限为 1,000 Token（你的配额）。将在午夜重置（UTC）。",
    ),
    (
        "The monthly token budget is used up: 90,000 tokens this month, the limit is 80,000 tokens "
        "(the quota of group staff (together)). It resets on the first of next month (Asia/Shanghai).",
        "每月 Token 预算已用完：本月已用 90,000 Token，上限为 80,000 Token（用户组 staff 的配额（全组共用））。"
        "将在下月 1 日重置（Asia/Shanghai）。",
    ),
    (
        "The daily cost budget is used up: USD 2.0000 today, the limit is USD 1.5000 "
        "(the quota of group staff (each member)). It resets at midnight (UTC).",
        "每日费用预算已用完：今天已用 USD 2.0000，上限为 USD 1.5000（用户组 staff 的配额（每位成员））。"
        "将在午夜重置（UTC）。",
    ),
    (
        "The monthly cost budget is used up: USD 30.0000 this month, the limit is USD 25.0000 (your quota). "
        "It resets on the first of next month (UTC).",
        "每月费用预算已用完：本月已用 USD 30.0000，上限为 USD 25.0000（你的配额）。将在下月 1 日重置（UTC）。",
    ),
    ("the quota of group ops (together)", "用户组 ops 的配额（全组共用）"),
    ("the quota of group ops (each member)", "用户组 ops 的配额（每位成员）"),
    ("12,000 tokens", "12,000 Token"),
    (
        "The conversation no longer fits the model's context window: the input (~130000 tokens) leaves "
        "no room for an answer in the context window",
        "对话已超出模型的上下文窗口：输入（约 130000 Token）在上下文窗口中没有为回答留下空间",
    ),
    (
        "429 Too Many Requests (the provider asks to wait 120 s before retrying, longer than a run "
        "waits: 30 s)",
        "429 Too Many Requests（提供方要求等待 120 秒后重试，超过了运行的最长等待时间：30 秒）",
    ),
    (
        "the input (~9000 tokens) leaves no room for an answer in the context window",
        "输入（约 9000 Token）在上下文窗口中没有为回答留下空间",
    ),
    (
        "stalled: no bytes from the provider for 300 s (not retried: the provider may already be "
        "generating and billing the answer; raise the provider's idle timeout if its model thinks "
        "silently for longer)",
        "停滞：提供方 300 秒内没有发送任何数据（未重试：提供方可能已在生成回答并计费；如果其模型会静默思考更久，"
        "请调高该提供方的空闲超时）",
    ),
    ("502 Bad Gateway (before any output)", "502 Bad Gateway（在任何输出之前）"),
    ("timed out: ReadTimeout", "超时：ReadTimeout"),
    (
        "connection failed: ConnectError: [Errno 111] Connection refused",
        "连接失败：ConnectError: [Errno 111] Connection refused",
    ),
    (
        "the connection closed early: RemoteProtocolError: peer closed connection",
        "连接过早关闭：RemoteProtocolError: peer closed connection",
    ),
]


@pytest.mark.parametrize(("stored", "chinese"), CASES, ids=[c[0][:40] for c in CASES])
def test_a_stored_text_is_shown_in_chinese_and_unchanged_in_english(stored, chinese):
    with translation.override("zh-hans"):
        assert shown(stored) == chinese
    with translation.override("en"):
        assert shown(stored) == stored


def test_every_listed_text_and_template_has_a_case():
    covered = {c[0] for c in CASES}
    for text in stored_texts.FIXED:
        assert text in covered, text
    for pattern in stored_texts.patterns():
        assert any(pattern.regex.match(c[0]) for c in CASES), pattern.template


@pytest.mark.parametrize(
    "stored",
    [
        "Stop",  # a person's own reason that equals a UI word is theirs, not a msgid
        "Looks fine, go ahead",
        "401 Unauthorized: invalid x-api-key",
        "maximum context length is 8192 tokens",  # "%(n)s tokens" needs a number
        "Stopped by the user. Again.",
        "",
    ],
)
def test_other_stored_texts_are_shown_as_stored(stored):
    with translation.override("zh-hans"):
        assert shown(stored) == stored


def _produced_strings() -> set[str]:
    """Every string literal of the code that stores texts, an f-string's values filled with "7"."""
    found: set[str] = set()
    for path in [*(ROOT / "chatapp").rglob("*.py"), *(ROOT / "agent").rglob("*.py")]:
        if path.name == "stored_texts.py" or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(re.sub(r"%\(\w+\)s", "7", node.value))
            elif isinstance(node, ast.JoinedStr):
                found.add(
                    "".join(v.value if isinstance(v, ast.Constant) else "7" for v in node.values)  # type: ignore[misc]
                )
    return found


def test_every_listed_text_still_comes_from_the_code_that_stores_it():
    """A reworded message in the worker, the engine or a view makes its entry here dead: fail then."""
    produced = _produced_strings()
    for text in stored_texts.FIXED:
        assert text in produced, f"no code stores {text!r} any more"
    for pattern in stored_texts.patterns():
        assert any(pattern.regex.match(s) for s in produced), f"no code stores {pattern.template!r} any more"


@pytest.mark.django_db
def test_a_run_stopped_before_it_started_is_stored_in_english_and_shown_in_chinese(cast):
    from chatapp.models import Conversation, Run
    from chatapp.services.runs import request_cancel

    convo = Conversation.objects.create(owner=cast["alice"], title="t")
    run = Run.objects.create(conversation=convo, provider_name="demo", model="m")
    with translation.override("zh-hans"):
        request_cancel(run)
    run.refresh_from_db()
    assert run.status == "cancelled" and run.error == "Stopped by the user."
    with translation.override("zh-hans"):
        assert shown(run.error) == "已由用户停止。"
