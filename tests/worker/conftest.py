from __future__ import annotations

import pytest

from tests.worker.stand_ins import Runtime


@pytest.fixture
def layer(settings):
    """An in-memory channel layer, also the one ``get_channel_layer()`` returns during the test."""
    from channels.layers import get_channel_layer

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    return get_channel_layer()


@pytest.fixture
def runtime(layer):
    yield Runtime(layer)
    from django.db import connections

    # The test database is dropped through "default", whose pool Django closes first; a mirror's pool
    # (the "deltas" connections live frames use on PostgreSQL) would keep it in use.
    for alias in connections:
        if connections.settings[alias].get("TEST", {}).get("MIRROR") and hasattr(
            connections[alias], "close_pool"
        ):
            connections[alias].close_pool()
