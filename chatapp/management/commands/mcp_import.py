"""Create or update MCP servers from a Claude Desktop / Cursor ``{"mcpServers": {...}}`` file.

    manage.py mcp_import FILE          (FILE may be - for standard input)
    manage.py mcp_import FILE --json   (what was done, as JSON)

Names become slugs (the tool namespace). Fields the format has (command, args, env, url, headers,
type, disabled) are written; timeouts, gateway and trusted keep their current values. The whole
file is imported or nothing is.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import CommandError

from agent.mcp import McpConfigError
from chatapp.management.migrated import MigratedCommand
from chatapp.services.mcp_io import import_servers


class Command(MigratedCommand):
    help = "Create or update MCP servers from an mcpServers JSON file (Claude Desktop / Cursor format)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="path to the JSON file, or - for standard input")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, **options) -> None:
        path = options["file"]
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path} is not UTF-8 text: {exc}") from exc
        try:
            done = import_servers(text)
        except McpConfigError as exc:
            raise CommandError(f"{path}: {exc}; nothing was imported") from exc
        if options["json"]:
            rows = [{"name": d.name, "action": d.action, "transport": d.transport} for d in done]
            self.stdout.write(json.dumps({"servers": rows}, ensure_ascii=False))
            return
        if not done:
            self.stdout.write("The file lists no servers; nothing to do.")
        for d in done:
            self.stdout.write(f"{d.action} {d.name} ({d.transport})")
