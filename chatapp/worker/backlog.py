"""How many run messages wait in the broker's run queue (the sweep's "is there a backlog?")."""

from __future__ import annotations

from django.conf import settings
from kombu.exceptions import ChannelError


def run_queue_backlog() -> int:
    """Messages waiting in the run queue, across its priority lists; 0 for a queue that does not
    exist yet (Redis drops an empty list). Messages a worker has fetched are not counted."""
    from chatapp.celery import app

    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    with app.connection_for_read() as conn:
        try:
            declared = conn.default_channel.queue_declare(queue=queue, passive=True)
        except ChannelError:
            return 0
    return int(declared.message_count)
