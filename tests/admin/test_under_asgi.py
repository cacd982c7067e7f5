"""The test buttons under ASGI (as daphne serves them): sync views run in a thread, asyncio.run works."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from chatapp.models import ProviderConfig

pytestmark = pytest.mark.django_db(transaction=True)


async def test_mcp_test_connection_and_provider_test_through_the_asgi_handler(
    async_client, people, env_query_server, demo_model_url
):
    await async_client.aforce_login(people["ada"])
    response = await async_client.post(f"/admin/chatapp/mcpserver/{env_query_server.pk}/test-connection/")
    assert response.status_code == 200
    assert "env_query__get_environment_status" in response.content.decode()

    config = await sync_to_async(ProviderConfig.objects.create)(
        name="demo-asgi", kind="openai_chat", preset="demo", base_url=demo_model_url, model="clearloop-demo"
    )
    response = await async_client.post(f"/admin/chatapp/providerconfig/{config.pk}/test/", follow=True)
    assert "answered in" in response.content.decode()
    # The ORM ran on asgiref's shared thread: close its connection, or the test database stays in use.
    await sync_to_async(connections.close_all)()
