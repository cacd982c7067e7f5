"""Fixtures of the durability tests: one private stack for the package's tests, demo tools wired to a
witness file."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.durable.harness import celery_broker, start_durable_stack, stop_durable_stack
from tests.integration.stack import free_port


# Stopped after the package's last test: its worker sweeps this process's test database, and the
# tests make --dist loadgroup sends here next must not have their rows adopted by it.
@pytest.fixture(scope="package")
def durable_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.conf import settings
    from django.test import override_settings

    if settings.EMBEDDED_REDIS or not settings.USES_POSTGRES:
        pytest.skip("durability tests run against PostgreSQL and Redis (make test sets them)")
    data_dir = tmp_path_factory.mktemp("durable")
    with django_db_blocker.unblock():
        durable = start_durable_stack(data_dir, free_port(), free_port())
    layers = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [durable.stack.redis_url], "capacity": 1500, "expiry": 30},
        }
    }
    try:
        # This process enqueues (approvals) and publishes (approval frames) into the private Redis.
        with celery_broker(durable.stack.redis_url, durable.queue), override_settings(CHANNEL_LAYERS=layers):
            yield durable
    finally:
        stop_durable_stack(durable)


@pytest.fixture
def demo_tools(transactional_db, cast, durable_stack, settings):
    """The demo provider, the demo_tools MCP server (outbox = this test's witness) and the policies."""
    from chatapp.models import McpServer, ProviderConfig, ToolPolicy
    from chatapp.services.demo_tools import POLICIES, WORKSPACE_FILES
    from chatapp.services.providers import ensure_env_providers

    settings.DEMO_MODEL_URL = durable_stack.demo_url
    ensure_env_providers()
    tag = uuid.uuid4().hex[:8]
    outbox = durable_stack.data_dir / f"outbox-{tag}.jsonl"
    hold = durable_stack.data_dir / f"hold-{tag}"
    server = McpServer.objects.create(
        name="demo_tools",
        transport="stdio",
        command=sys.executable,
        args=["-m", "demo.servers.demo_tools"],
        env={"CLEARLOOP_OUTBOX": str(outbox)},
    )
    for pattern, tier, approval in POLICIES:
        ToolPolicy.objects.update_or_create(pattern=pattern, defaults={"tier": tier, "approval": approval})
    template = Path(durable_stack.data_dir) / "workspaces" / f"user-{cast['alice'].pk}" / "template"
    for relative, content in WORKSPACE_FILES.items():
        path = template / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")

    def hold_after_send() -> None:
        server.env = {**server.env, "CLEARLOOP_OUTBOX_HOLD": str(hold)}
        server.save(update_fields=["env"])

    return SimpleNamespace(
        outbox=outbox,
        hold=hold,
        hold_after_send=hold_after_send,
        provider=ProviderConfig.objects.get(name="demo"),
        workspaces=Path(durable_stack.data_dir) / "workspaces" / f"user-{cast['alice'].pk}",
    )
