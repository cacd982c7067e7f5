"""The seeds' tool scenarios. Each returns a Plan when it applies to the turn, else None.

Every decision is a function of the request alone (tools on offer + history so far), so the same
request always gets the same answer, and a resumed run sees the same model as an uninterrupted one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from demo.model.history import SeenCall, Turn
from demo.model.plan import Plan, PlannedToolCall
from demo.model.text import say


def fit(turn: Turn, name: str, desired: dict[str, Any]) -> dict[str, Any]:
    """Keep only the arguments the offered schema knows (real tools may differ from the seed's)."""
    props = (turn.tools.get(name, {}).get("parameters") or {}).get("properties")
    return {k: v for k, v in desired.items() if k in props} if props else desired


def calls(turn: Turn, *pairs: tuple[str, dict[str, Any]]) -> Plan:
    planned = tuple(PlannedToolCall(name, fit(turn, name, args)) for name, args in pairs)
    return Plan(tool_calls=planned, finish_reason="tool_calls")


def failed_text(turn: Turn, failures: list[SeenCall]) -> Plan:
    errors = "; ".join(f"{c.name}: {_error(c)}" for c in failures)
    return say(turn, f"工具调用失败，无法完成：{errors}", f"A tool call failed, so I stopped here: {errors}")


def _error(call: SeenCall) -> str:
    return str(call.result.get("error")) if isinstance(call.result, dict) else str(call.result)[:200]


# ----- 000 §6: read config.yaml + list Markdown files in parallel, then write a report -------------
FILES = re.compile(r"config\.yaml|\.md\b|markdown|report", re.IGNORECASE)


def files_report(turn: Turn) -> Plan | None:
    read, search = turn.tool("read_file"), turn.tool("search_files")
    if not (read and search and FILES.search(turn.user_text)):
        return None
    write = turn.tool("write_file")
    if not turn.rounds:
        return calls(
            turn,
            (read, {"path": "config.yaml", "offset": 1, "limit": 500}),
            (search, {"path": ".", "pattern": "*.md", "target": "files", "limit": 50}),
        )
    failures = [c for r in turn.rounds for c in r if not c.ok]
    if failures:
        return failed_text(turn, failures)
    report = build_report(turn, turn.results("read_file")[-1], turn.results("search_files")[-1])
    if write and not turn.results("write_file") and not turn.tools_off:
        return calls(turn, (write, {"path": "report.md", "content": report}))
    if turn.results("write_file"):
        return say(turn, "分析完成，结果已经写入 report.md。", "Done: the analysis was written to report.md.")
    return say(turn, report, report)


def _matches(result: Any) -> list[str]:
    items: list[Any] = []
    if isinstance(result, dict):
        items = result.get("matches") or result.get("files") or result.get("results") or []
    out = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("path") or item.get("name")
        if item:
            out.append(str(item))
    return out


def build_report(turn: Turn, read: SeenCall, search: SeenCall) -> str:
    content = read.result.get("content", "") if isinstance(read.result, dict) else str(read.result)
    provider = re.search(r"provider:\s*(\S+)", content)
    default = re.search(r"default:\s*(\S+)", content)
    files = _matches(search.result)
    if turn.cjk:
        listed = "、".join(files[:-1]) + f" 和 {files[-1]}" if len(files) > 1 else "".join(files)
        config = (
            f"当前模型提供商为 {provider.group(1)}，默认模型为 {default.group(1)}。"
            if provider and default
            else f"config.yaml 的开头是：{content[:120]}"
        )
        return f"# 分析报告\n\n{config}\n\n当前目录包含 {len(files)} 个 Markdown 文件：{listed}。\n"
    config = (
        f"The model provider is {provider.group(1)}; the default model is {default.group(1)}."
        if provider and default
        else f"config.yaml starts with: {content[:120]}"
    )
    listed = ", ".join(files)
    return f"# Analysis report\n\n{config}\n\nThe directory holds {len(files)} Markdown files: {listed}.\n"


# ----- 000 §10.4: the two newest users -------------------------------------------------------------
USERS = re.compile(r"\busers?\b|用户", re.IGNORECASE)
NEWEST_USERS_SQL = "SELECT id, name, created_at FROM users ORDER BY created_at DESC LIMIT 2"


def newest_users(turn: Turn) -> Plan | None:
    query = turn.tool("query_database")
    if not (query and USERS.search(turn.user_text)):
        return None
    done = turn.results("query_database")
    if not done:
        return calls(turn, (query, {"sql": NEWEST_USERS_SQL, "limit": 2}))
    if not done[-1].ok:
        return failed_text(turn, done[-1:])
    rows = _rows(done[-1].result)
    lines = [", ".join(f"{k}={v}" for k, v in row.items()) for row in rows]
    listing = "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1)) or "(no rows)"
    return say(turn, f"最近创建的两个用户：\n{listing}", f"The two newest users:\n{listing}")


def _rows(result: Any) -> list[dict[str, Any]]:
    if not isinstance(result, dict):
        return []
    rows = result.get("rows") or result.get("data") or []
    columns = result.get("columns") or []
    return [row if isinstance(row, dict) else dict(zip(columns, row, strict=False)) for row in rows]


# ----- 004 §7.1: environment status + simulated geolocation in parallel, then a summary -----------
ENV = re.compile(r"environment|weather|air|run|环境|天气|空气|跑步|定位", re.IGNORECASE)


def environment(turn: Turn) -> Plan | None:
    env, geo = turn.tool("get_environment_status"), turn.tool("simulate_geolocation")
    if not (env and geo and ENV.search(turn.user_text)):
        return None
    if not turn.rounds:
        area = re.search(r"\b[A-Z]\d{3,5}\b", turn.user_text)
        return calls(
            turn,
            (env, {"area_code": area.group(0) if area else "A1001"}),
            (geo, {"lat": 31.2304, "lng": 121.4737, "radius": 500}),
        )
    got_env, got_geo = turn.results("get_environment_status"), turn.results("simulate_geolocation")
    failures = [c for c in got_env[-1:] + got_geo[-1:] if not c.ok]
    if failures:
        return failed_text(turn, failures)
    facts = f"{_flat(got_env[-1].result)} | {_flat(got_geo[-1].result)}"
    return say(
        turn,
        f"综合环境与定位结果：{facts}。据此判断是否适合户外活动。",
        f"Putting the environment and the location together: {facts}.",
    )


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items() if not isinstance(v, dict | list))
    return json.dumps(value, ensure_ascii=False)[:200]


# ----- send_message: a high-risk tool for approval flows (003 §3.2) --------------------------------
SEND = re.compile(r"\bsend\b|\bmessage\b|\btext\b|发送|短信|消息", re.IGNORECASE)


def send_message(turn: Turn) -> Plan | None:
    tool = turn.tool("send_message")
    if not (tool and SEND.search(turn.user_text)):
        return None
    done = turn.results("send_message")
    if not done:
        phone = re.search(r"\+?\d[\d-]{5,15}\d", turn.user_text)
        quoted = re.search(r"[\"“「](.+?)[\"”」]", turn.user_text)
        args = {
            "phone_number": phone.group(0) if phone else "+10000000000",
            "content": quoted.group(1) if quoted else "Hello from clearloop",
        }
        return calls(turn, (tool, args))
    if done[-1].ok:
        return say(turn, "消息已发送。", "The message was sent.")
    return say(turn, f"消息没有发送：{_error(done[-1])}", f"The message was not sent: {_error(done[-1])}")


# ----- issue 11: the user attached a file and asks about it: read it, write report.md, answer ------
TEXT_FILE = re.compile(r"\.(csv|tsv|txt|md|json|jsonl|ya?ml|log|xml|html|py|sql|toml|ini)$", re.IGNORECASE)


def attached_file(turn: Turn) -> Plan | None:
    read = turn.tool("read_file")
    names = [n for n in turn.attachments if TEXT_FILE.search(n)]
    if not read:
        return None
    if not names:
        return None
    if not turn.rounds:
        return calls(turn, (read, {"path": names[0], "offset": 1, "limit": 500}))
    failures = [c for r in turn.rounds for c in r if not c.ok]
    if failures:
        return failed_text(turn, failures)
    content = turn.results("read_file")[-1].result
    text = content.get("content", "") if isinstance(content, dict) else str(content)
    report = describe_table(names[0], text)
    write = turn.tool("write_file")
    if write and not turn.results("write_file") and not turn.tools_off:
        return calls(turn, (write, {"path": "report.md", "content": report}))
    if turn.results("write_file"):
        return say(
            turn,
            f"我读了 {names[0]}，分析结果已经写入 report.md。",
            f"I read {names[0]} and wrote the analysis to report.md.",
        )
    return say(turn, report, report)


def describe_table(name: str, text: str) -> str:
    """Rows, columns and the sum of each numeric column of a CSV/TSV (other text: lines and words)."""
    lines = [line for line in text.splitlines() if line.strip()]
    sep = "\t" if name.lower().endswith(".tsv") else ","
    if len(lines) < 2 or sep not in lines[0]:
        return f"# Report on {name}\n\n{len(lines)} lines, {len(text.split())} words.\n"
    header = [h.strip() for h in lines[0].split(sep)]
    rows = [[c.strip() for c in line.split(sep)] for line in lines[1:]]
    out = [f"# Report on {name}", "", f"{len(rows)} rows, columns: {', '.join(header)}.", ""]
    for i, column in enumerate(header):
        values = [r[i] for r in rows if i < len(r)]
        try:
            total = sum(float(v) for v in values)
        except ValueError:
            continue
        out.append(f"- {column}: sum {total:g}, mean {total / max(len(values), 1):g}")
    return "\n".join(out) + "\n"


SCENARIOS = (attached_file, files_report, newest_users, environment, send_message)
