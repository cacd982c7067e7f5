"""daphne's accept queue (chatapp/devstack.py ``LISTEN_BACKLOG``): with daphne's -b/-p, Twisted listens
with a queue of 50, and 200 users sending at once overflowed it; connections dropped there ended in
resets (the bench client's httpx.ReadError, docs/performance.md, session 20). For a listening socket
the kernel reports the queue's size as its Send-Q, which ``ss`` prints."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from chatapp.devstack import LISTEN_BACKLOG, daphne_argv, listens, wait_for
from tests.integration.stack import free_port, stack_env


def _listen_queue(port: int) -> int:
    out = subprocess.run(
        ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True, timeout=10
    ).stdout.split()
    # State Recv-Q Send-Q Local:Port Peer:Port; for a listener Send-Q is the accept queue's size.
    assert out[0] == "LISTEN", out
    return int(out[2])


@pytest.mark.skipif(not shutil.which("ss"), reason="needs iproute2's ss to read a listener's queue")
def test_daphne_listens_with_the_accept_queue_set_not_twisteds_fifty(tmp_path):
    port = free_port()
    argv = daphne_argv(port)
    assert argv[0] == sys.executable
    daphne = subprocess.Popen(
        argv, env=stack_env(port, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: listens(daphne.pid, port), 60, "daphne", daphne)
        assert _listen_queue(port) == LISTEN_BACKLOG == 1024
    finally:
        daphne.terminate()
        daphne.wait(30)
