"""The admin's cast: Ada is a superuser, April approves (staff + approve_toolcall), Stan is staff
without that permission, Otto audits (not staff), Alice chats. Plus a real demo model and demo MCP
server to test against."""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest
import uvicorn

from demo.model import DemoModelSettings, create_app

ENV_QUERY_ARGS = ["-m", "demo.servers.env_query"]


@pytest.fixture
def people(db):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission

    users = get_user_model()
    # No passwords: the tests log in with force_login, and hashing would cost seconds per test.
    ada = users.objects.create_superuser("ada", password=None)
    april = users.objects.create_user("april", is_staff=True)
    april.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    stan = users.objects.create_user("stan", is_staff=True)
    stan.user_permissions.add(*Permission.objects.filter(codename__in=["view_toolcall", "view_run"]))
    otto = users.objects.create_user("otto")
    Group.objects.get_or_create(name="auditors")[0].user_set.add(otto)
    alice = users.objects.create_user("alice")
    return {"ada": ada, "april": april, "stan": stan, "otto": otto, "alice": alice}


@pytest.fixture
def login(client, people):
    """``login("april")`` logs the test client in as that person and returns the client."""

    def as_user(name: str):
        client.force_login(people[name])
        return client

    return as_user


@pytest.fixture(scope="session")
def demo_model_url():
    """The project's demo model served for real by uvicorn on a random loopback port, in a thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    app = create_app(DemoModelSettings(tokens_per_second=0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the demo model did not start"
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture
def dead_url():
    """A loopback URL nobody listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def env_query_server(db):
    from chatapp.models import McpServer

    return McpServer.objects.create(
        name="env_query", command=sys.executable, args=ENV_QUERY_ARGS, connect_timeout=20
    )


@pytest.fixture
def broken_server(db):
    from chatapp.models import McpServer

    return McpServer.objects.create(
        name="broken",
        command=sys.executable,
        args=["-c", "import sys; sys.stderr.write('no such thing\\n'); sys.exit(3)"],
        connect_timeout=10,
    )
