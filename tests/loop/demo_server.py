"""Serve the demo model over real HTTP on 127.0.0.1 (a random port) for the duration of a test."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import httpx
import uvicorn

from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from demo.model import DemoModelSettings, create_app


@contextlib.asynccontextmanager
async def serve_demo(settings: DemoModelSettings | None = None) -> AsyncIterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # already listening: clients queue in the backlog, no waiting for "started"
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(settings or DemoModelSettings(tokens_per_second=0)), log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextlib.asynccontextmanager
async def demo_provider(**overrides) -> AsyncIterator[object]:
    settings = overrides.pop("demo_settings", None)
    async with serve_demo(settings) as base_url, httpx.AsyncClient() as http:
        provider_settings = ProviderSettings(
            name="demo",
            kind="openai_chat",
            base_url=base_url,
            model="clearloop-demo",
            preset="demo",
            **overrides,
        )
        yield build_provider(provider_settings, http)
