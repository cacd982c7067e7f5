"""Where the time before the model call goes: wall-clock marks of one run's start, logged once.

The time between a user's Send and the model receiving the request is spent in several processes
(daphne's view and commit, the broker, the worker's admission, lease, context and toolbox, the first
request's preparation), so each mark is ``time.time()``: marks taken in different processes of one
host line up. One INFO record per delivery on the ``clearloop.start`` logger, as the first round's
request leaves; ``bench/browser`` reads them from the worker's log and prints the split
(docs/performance.md). Nothing else reads them.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

log = logging.getLogger("clearloop.start")
PREFIX = "start spans "

# The marks in the order a run passes them; the bench prints the gap before each.
ORDER = (
    "committed",  # daphne: the send's transaction committed, the task is being published
    "received",  # worker: the Celery task runs
    "admitted",  # a slot of the worker's capacity is taken
    "leased",  # the lease is committed (the "running" frame goes out)
    "driving",  # the run's task runs on the worker's loop
    "context",  # load_run_context returned
    "toolbox",  # the toolbox is built
    "agent",  # the engine starts (settings assembled)
    "prepared",  # the first round's request is prepared (history fitted, tokens counted)
    "request",  # its RoundStarted frame is stored and published: the request is sent next
)


@dataclass
class StartSpans:
    run_id: int
    marks: dict[str, float] = field(default_factory=dict)
    reported: bool = False

    def mark(self, name: str, at: float | None = None) -> None:
        self.marks.setdefault(name, time.time() if at is None else at)

    def report(self) -> None:
        """Log the marks once (the first request of this delivery is on its way)."""
        if self.reported:
            return
        self.reported = True
        log.info("%s%s", PREFIX, json.dumps({"run": self.run_id, **self.marks}))


def parse(line: str) -> dict[str, float] | None:
    """The marks of one log line written by ``report``, or None for any other line."""
    at = line.find(PREFIX)
    if at < 0:
        return None
    try:
        return json.loads(line[at + len(PREFIX) :])
    except ValueError:
        return None
