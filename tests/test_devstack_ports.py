"""The local topology's ports (chatapp/devstack.py): a port is handed out once per process, and a
stack refuses a web port another program answers on instead of taking it for its own daphne (a live
stack's daphne and demo MCP server were once given the same port, in CI)."""

from __future__ import annotations

import os
import socket

import pytest

from chatapp.devstack import Stack, StackError, free_port, listens


def test_a_port_is_never_handed_out_twice_in_one_process():
    ports = [free_port() for _ in range(3000)]
    assert len(set(ports)) == len(ports)


def test_a_stack_refuses_a_web_port_another_program_listens_on(tmp_path):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        stack = Stack(port=port, with_worker=False, log_dir=tmp_path)
        with pytest.raises(StackError, match=f"127.0.0.1:{port} is in use by another program"):
            stack.start()
    assert stack.procs == {}  # nothing was started


def test_only_the_process_that_listens_on_a_port_is_taken_for_its_server():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert listens(os.getpid(), port)
        assert not listens(os.getpid(), free_port())  # a port nobody listens on
        assert not listens(os.getppid(), port)  # another process: not its listener


def test_runall_on_a_taken_port_says_so_and_starts_nothing(monkeypatch):
    import signal

    from django.core.management import CommandError, call_command

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    started: list[str] = []
    monkeypatch.setattr(Stack, "spawn", lambda self, name, argv, **env: started.append(name))
    try:
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            other.listen()
            port = other.getsockname()[1]
            with pytest.raises(CommandError, match=f"127.0.0.1:{port} is in use by another program"):
                call_command("runall", port=port)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert started == []


def test_with_no_broker_listening_no_worker_is_found_at_once(monkeypatch):
    # `manage.py chat` asks before starting a local stack; the ping's own connection used to retry
    # for ~6 s against a closed port before saying no.
    import time

    from chatapp.celery import app
    from chatapp.devstack import worker_ready

    # The app's connection is patched, not its settings: Celery derives ``broker_write_url`` from
    # ``broker_url``, so undoing a patch of both pinned the write URL to the closed port for the rest of
    # the process, and the live stack started after it never answered a ping (CI, session 16).
    closed = f"redis://127.0.0.1:{free_port()}/0"
    monkeypatch.setattr(app, "connection_for_write", lambda: app.connection_for_read(closed))
    started = time.monotonic()
    assert worker_ready() is False
    assert time.monotonic() - started < 2
