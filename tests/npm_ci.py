"""``npm ci`` of a test's Node packages, once, even when several pytest processes want them at once.

``make test`` runs the suite in pytest-xdist processes: the OpenID provider's packages, for example,
are wanted by tests/oidc and by the browser's sign-in test, which may start together in two
processes; two ``npm ci`` into one folder break each other's links (ENOENT, seen in a run). The
first process to take the folder's lock installs; the others wait for it, then find the install
fresh and leave it alone.
"""

from __future__ import annotations

import fcntl
import subprocess
from collections.abc import Callable
from pathlib import Path


def npm_ci(folder: Path, fresh: Callable[[], bool], timeout: float = 600) -> None:
    if fresh():
        return
    with open(folder / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if fresh():  # another process installed it while this one waited
            return
        subprocess.run(
            ["npm", "ci", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error"],
            check=True,
            timeout=timeout,
        )
