"""The host configuration's two reads at every run's start (``mcp_config.host_servers``,
``policies.load_rules``) are written out once on PostgreSQL: the same rows, values and order as the
ORM's queries they replace (docs/performance.md, session 17)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatapp.models import McpServer, ToolPolicy
from chatapp.services.mcp_config import host_servers
from chatapp.services.policies import Rule, load_rules

pytestmark = pytest.mark.django_db


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_servers_equal_the_orms_in_order_with_secrets_decrypted():
    modes = McpServer.AuthMode
    McpServer.objects.create(name="zeta", command="z", args=["-m", "ü"], env={"API_TOKEN": "s3cr3t-value"})
    McpServer.objects.create(name="alpha", command="a", enabled=False)  # left out: disabled, no OAuth
    McpServer.objects.create(
        name="oauth_off", transport="http", url="http://127.0.0.1:9/mcp", enabled=False, auth_mode=modes.SHARED
    )
    McpServer.objects.create(
        name="mine",
        transport="http",
        url="http://127.0.0.1:9/mcp",
        headers={"Authorization": "Bearer abcdefghijklmnop"},
        auth_mode=modes.PER_USER,
        tools_seen=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
        trusted=True,
        gateway=True,
        call_timeout=12.5,
    )
    from django.db.models import Q

    expected = list(McpServer.objects.filter(Q(enabled=True) | ~Q(auth_mode=modes.NONE)))
    with CaptureQueriesContext(connection) as queries:
        ours = host_servers()
    assert len(queries) == 1
    assert [s.name for s in ours] == ["mine", "oauth_off", "zeta"] == [s.name for s in expected]
    assert [_values(s) for s in ours] == [_values(s) for s in expected]
    assert ours[2].env == {"API_TOKEN": "s3cr3t-value"}  # decrypted, as the ORM loads it
    assert ours[0].tools_seen[0]["input_schema"] == {"type": "object"}  # JSON decoded


def test_the_rules_equal_the_orms_in_pattern_order():
    ToolPolicy.objects.create(pattern="github__*", tier="high", approval="always", max_calls_per_run=7)
    ToolPolicy.objects.create(
        pattern="fs_read",
        tier="low",
        approval="never",
        enabled=False,
        description_override="读文件",
        allow_self_approval=True,
        approver="user",
    )
    expected = [
        (
            p.pattern,
            Rule(
                p.tier,
                p.approval,
                p.enabled,
                p.max_calls_per_run,
                p.description_override,
                p.allow_self_approval,
                p.approver,
            ),
        )
        for p in ToolPolicy.objects.all()
    ]
    with CaptureQueriesContext(connection) as queries:
        ours = load_rules()
    assert len(queries) == 1
    assert ours == expected
    assert [pattern for pattern, _ in ours] == ["fs_read", "github__*"]


def test_no_rows_are_no_rules_and_no_servers():
    assert load_rules() == []
    assert host_servers() == []
