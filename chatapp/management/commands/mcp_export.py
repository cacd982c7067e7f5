"""Print every MCP server as a Claude Desktop / Cursor ``{"mcpServers": {...}}`` document.

    manage.py mcp_export                      literal env / header values become env:NAME placeholders
    manage.py mcp_export --include-secrets    literal values exported as they are stored
    manage.py mcp_export --enabled-only

Values already written ``env:NAME`` are references and are exported unchanged. The placeholders
that replaced literal values are listed on standard error, so the output itself stays a clean file.
"""

from __future__ import annotations

import json

from chatapp.management.migrated import MigratedCommand
from chatapp.models import McpServer
from chatapp.services.mcp_io import export_servers


class Command(MigratedCommand):
    help = "Print the MCP servers as mcpServers JSON (secrets masked unless --include-secrets)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--include-secrets",
            action="store_true",
            help="export literal env and header values as stored (they may be tokens)",
        )
        parser.add_argument("--enabled-only", action="store_true")

    def handle(self, *args, **options) -> None:
        rows = McpServer.objects.order_by("name")
        if options["enabled_only"]:
            rows = rows.filter(enabled=True)
        export = export_servers(rows, include_secrets=options["include_secrets"])
        self.stdout.write(json.dumps(export.document, indent=2, ensure_ascii=False))
        for line in export.masked:
            self.stderr.write(f"masked {line} (set that variable, or use --include-secrets)")
        for line in export.skipped:
            self.stderr.write(f"skipped: {line}")
