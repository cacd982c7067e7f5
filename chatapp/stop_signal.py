"""The Redis channel that carries "run N was stopped" from the web process to every worker.

Used by ``services.runs.request_cancel`` (publish, after commit) and ``worker.cancels`` (subscribe).
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

log = logging.getLogger(__name__)
_client = None
_lock = threading.Lock()


def channel_name() -> str:
    # Pub/sub channels are shared by every database number of a Redis server: the name carries the
    # database, so two deployments (or test sessions) on one Redis never stop each other's runs.
    return f"clearloop.cancel.{settings.DATABASES['default']['NAME']}"


def _sync_client():
    global _client
    with _lock:
        if _client is None:
            import redis

            url = str(settings.REDIS_URL)
            _client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        return _client


def announce(run_id: int) -> None:
    """Tell every worker that this run was stopped (call once the stop is committed)."""
    try:
        _sync_client().publish(channel_name(), str(run_id))
    except Exception:  # noqa: BLE001 - the workers' safety poll reads the stored flag
        log.warning("announcing the stop of run %s failed", run_id, exc_info=True)
