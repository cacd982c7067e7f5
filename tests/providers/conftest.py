from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

# The helper modules sit beside the tests; make them importable whatever pytest's rootdir is.
sys.path.insert(0, str(Path(__file__).parent))

from provider_fixture_server import FixtureServer  # noqa: E402


@pytest.fixture
async def server() -> AsyncIterator[FixtureServer]:
    fixture = FixtureServer()
    await fixture.start()
    yield fixture
    await fixture.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client
