"""Connect to the MCP servers and print what the model would be offered.

    manage.py mcp_tools                 a readable listing
    manage.py mcp_tools --json          {"servers": [{server, status, protocol_version, error, tools}]}
    manage.py mcp_tools --server NAME   only that server (also when disabled)

Per server: connected or error (with the reason), the protocol version and the catalogue as the
model sees it: namespaced names, descriptions (policy overrides applied) and parameters, plus the
policy tier and whether the tool is offered at all. Every server is probed on its own, so a broken
one never hides the others; the pool is closed (stdio children gone) before the command returns.
The exit status is 0 when every server connected, 1 otherwise (the listing is printed first).
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from chatapp.management.migrated import MigratedCommand
from chatapp.models import McpServer
from chatapp.services.probes import ServerReport, probe_servers


class Command(MigratedCommand):
    help = "Connect to each enabled MCP server and list its tools as the model will see them."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--server", action="append", default=[], help="probe only this server")

    def handle(self, *args, **options) -> None:
        if options["server"]:
            rows = list(McpServer.objects.filter(name__in=options["server"]))
            missing = set(options["server"]) - {r.name for r in rows}
            if missing:
                raise CommandError(f"no MCP server named {', '.join(sorted(missing))}")
        else:
            rows = list(McpServer.objects.filter(enabled=True))
        reports = probe_servers(rows)
        if options["json"]:
            self.stdout.write(
                json.dumps({"servers": [r.to_dict() for r in reports]}, indent=2, ensure_ascii=False)
            )
        else:
            if not reports:
                self.stdout.write("No enabled MCP servers.")
            for report in reports:
                self._print(report)
        failed = [r.server for r in reports if not r.connected]
        if failed:
            # After the listing: stdout stays a complete document; the status tells scripts.
            raise CommandError(f"not connected: {', '.join(failed)}", returncode=1)

    def _print(self, report: ServerReport) -> None:
        if not report.connected:
            why = " ".join(part for part in (report.summary, report.error or "") if part)
            self.stdout.write(f"{report.server} ({report.transport}): error: {why}")
            return
        self.stdout.write(
            f"{report.server} ({report.transport}): connected, protocol {report.protocol_version}, "
            f"{len(report.tools)} tools"
        )
        for tool in report.tools:
            state = "offered" if tool.offered else f"not offered ({tool.disabled_reason})"
            approval = ", needs approval" if tool.needs_approval else ""
            self.stdout.write(f"  {tool.name} [{tool.tier}{approval}; {state}]")
            first_line = (tool.description or "").strip().splitlines()[:1]
            if first_line:
                self.stdout.write(f"    {first_line[0]}")
            self.stdout.write(f"    parameters: {json.dumps(tool.parameters, ensure_ascii=False)}")
