"""Demo MCP servers, their policies, the demo database and the demo user's workspace files.

``seed_demo`` calls ``seed_demo_tools``; everything here is idempotent. The workspace files are those
of the seed's worked example (000 §6): ``config.yaml`` with the content shown in 000 §6.3 and three
Markdown files, copied into each new conversation's workspace.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings

from chatapp.models import McpServer, ToolPolicy
from chatapp.services import demo_database

WORKSPACE_FILES = {
    "config.yaml": "model:\n  provider: agents\n  default: Qwen3.6-Plus\n",
    "README.md": "# 示例项目\n\n这是 clearloop 演示工作区，供文件工具读取和写入。\n",
    "CHANGELOG.md": "# Changelog\n\n## 0.1.0\n\n- 初始版本：读取配置、列出 Markdown 文件、生成报告。\n",
    "docs/部署说明.md": "# 部署说明\n\n1. 安装依赖\n2. 配置模型提供商\n3. 启动服务\n",
}

POLICIES = [
    ("read_file", "read_only", "never"),
    ("search_files", "read_only", "never"),
    ("write_file", "low", "never"),
    ("append_file", "low", "never"),
    ("query_database", "read_only", "never"),
    ("env_query__*", "read_only", "never"),
    ("geo_simulator__*", "read_only", "never"),
    ("demo_tools__get_stock_price", "read_only", "never"),
    ("demo_tools__send_message", "high", "always"),
]


def demo_servers() -> list[dict[str, Any]]:
    python = sys.executable
    outbox = str(Path(settings.DATA_DIR) / "outbox.jsonl")
    return [
        {
            "name": "env_query",
            "transport": "stdio",
            "command": python,
            "args": ["-m", "demo.servers.env_query"],
        },
        {
            "name": "geo_simulator",
            "transport": "http",
            "url": f"http://127.0.0.1:{settings.DEMO_MCP_PORT}/mcp",
        },
        {
            "name": "demo_tools",
            "transport": "stdio",
            "command": python,
            "args": ["-m", "demo.servers.demo_tools"],
            "env": {"CLEARLOOP_OUTBOX": outbox},
        },
    ]


def seed_demo_tools(demo_user: Any) -> None:
    for server in demo_servers():
        name = server.pop("name")
        McpServer.objects.update_or_create(name=name, defaults={"enabled": True, **server})
    for pattern, tier, approval in POLICIES:
        ToolPolicy.objects.update_or_create(pattern=pattern, defaults={"tier": tier, "approval": approval})
    template = Path(settings.WORKSPACE_ROOT) / f"user-{demo_user.pk}" / "template"
    for relative, content in WORKSPACE_FILES.items():
        path = template / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    demo_database.ensure()
