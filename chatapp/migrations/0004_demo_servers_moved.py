"""The demo MCP servers moved from ``agent.demo_servers`` to ``demo.servers``: rewrite stored
``-m agent.demo_servers.<name>`` arguments so servers saved before the move still start."""

from django.db import migrations

OLD, NEW = "agent.demo_servers.", "demo.servers."


def _rewrite(apps, old: str, new: str) -> None:
    McpServer = apps.get_model("chatapp", "McpServer")
    for server in McpServer.objects.all():
        args = server.args or []
        moved = [a.replace(old, new, 1) if isinstance(a, str) and a.startswith(old) else a for a in args]
        if moved != args:
            server.args = moved
            server.save(update_fields=["args"])


def forwards(apps, schema_editor):
    _rewrite(apps, OLD, NEW)


def backwards(apps, schema_editor):
    _rewrite(apps, NEW, OLD)


class Migration(migrations.Migration):
    dependencies = [("chatapp", "0003_mcp_server_name")]
    operations = [migrations.RunPython(forwards, backwards)]
