"""A run's host configuration reads the MCP servers once (``mcp_config.host_servers``) and answers
its four questions from that read (docs/performance.md, session 9): the same answers as the four
reads it replaces, for every kind of server."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatapp.models import McpServer
from chatapp.services import mcp_oauth
from chatapp.services.mcp_catalogues import known_catalogues
from chatapp.services.mcp_config import enabled_configs, host_servers, user_configs
from chatapp.worker.toolboxes import SignInRequired, _load_host_config

pytestmark = pytest.mark.django_db
SEEN = [
    {
        "server": "s",
        "remote_name": "t",
        "exposed_name": "s__t",
        "description": "d",
        "input_schema": {"type": "object"},
        "definition_hash": "h",
    }
]


@pytest.fixture
def servers(db):
    url = "http://127.0.0.1:9/mcp"
    made = [
        McpServer(name="plain", transport="http", url=url),
        McpServer(name="plain-off", transport="http", url=url, enabled=False),
        McpServer(name="team", transport="http", url=url, auth_mode="shared", tools_seen=SEEN),
        McpServer(name="team-off", transport="http", url=url, auth_mode="shared", enabled=False, tools_seen=SEEN),
        McpServer(name="mine", transport="http", url=url, auth_mode="per_user", tools_seen=SEEN),
        McpServer(name="mine-unseen", transport="http", url=url, auth_mode="per_user"),
    ]
    return McpServer.objects.bulk_create(made)


def names(configs) -> list[str]:
    return [c.name for c in configs]


def test_the_four_answers_from_one_read_equal_the_four_reads(cast, servers):
    rows = host_servers()
    assert names(enabled_configs(rows)) == names(enabled_configs()) == ["plain", "team"]
    assert names(user_configs(cast["alice"].pk, rows)) == names(user_configs(cast["alice"].pk))
    assert names(user_configs(cast["alice"].pk, rows)) == ["mine", "mine-unseen"]
    assert known_catalogues(servers=rows) == known_catalogues()
    assert sorted(known_catalogues(servers=rows)) == ["mine", "team", "team-off"]
    assert known_catalogues({"team"}, servers=rows) == known_catalogues({"team"})
    for off, only in ((frozenset(), None), (frozenset({"mine-unseen"}), None), (frozenset(), {"team"})):
        one = mcp_oauth.sign_ins_needed(cast["alice"].pk, off, only, servers=rows)
        assert one == mcp_oauth.sign_ins_needed(cast["alice"].pk, off, only)
    assert [s["name"] for s in mcp_oauth.sign_ins_needed(cast["alice"].pk, servers=rows)] == [
        "mine", "mine-unseen", "team"
    ]


def test_a_runs_host_configuration_reads_the_servers_once(cast, servers):
    McpServer.objects.filter(name="mine-unseen").delete()  # else the run waits for its sign-in
    with CaptureQueriesContext(connection) as queries:
        configs, mine, _rules, _trusted, _backend, known = _load_host_config(owner_id=cast["alice"].pk)
    server_reads = [q["sql"] for q in queries.captured_queries if 'FROM "chatapp_mcpserver"' in q["sql"]]
    assert len(server_reads) == 1, server_reads
    assert (names(configs), names(mine), sorted(known)) == (["plain", "team"], ["mine"], ["mine", "team", "team-off"])
    McpServer.objects.create(name="new-unseen", transport="http", url="http://127.0.0.1:9/mcp", auth_mode="shared")
    with pytest.raises(SignInRequired, match="new-unseen"):
        _load_host_config(owner_id=cast["alice"].pk)
