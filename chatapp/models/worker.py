"""Worker liveness: every worker process writes its heartbeat here, so a run whose worker died is
taken back within seconds instead of when its lease runs out (see ``chatapp/worker/liveness.py``).

It lives in the database rather than Redis because the database is what every worker sharing the
runs also shares (several stacks may use one database with different brokers), and because a Redis
restart would otherwise make every worker look dead at once.
"""

from __future__ import annotations

from django.db import models


class WorkerBeat(models.Model):
    worker_id = models.CharField(max_length=100, primary_key=True)
    # Only workers of one queue (one deployment) take each other's runs over: test stacks and
    # side-by-side deployments may share a database without sharing their tools and folders.
    queue = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(db_index=True)
    # The runs this worker's Celery threads held at its last beat, waiting for a slot of its capacity:
    # their task messages are with it, not lost, so no worker's sweep enqueues them again. Nullable so
    # a worker of the previous release, started during a rolling upgrade, can still write its beat.
    holding = models.JSONField(default=list, blank=True, null=True)

    def __str__(self) -> str:
        return f"{self.worker_id} (last beat {self.beat_at:%H:%M:%S})"
