"""The fixed cast of every web test: Alice owns things, Bob has no access, Ada is an admin, Otto audits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.stack import free_port, stack_env

TESTS = Path(__file__).resolve().parent


# A test is `live` when it needs a process besides pytest: the daphne + Celery stack, PostgreSQL or
# Redis servers, or an MCP server it spawns. `browser` tests also drive Chromium. `make check` runs
# everything else (`-m "not live and not browser"`); `make test` runs all of it.
LIVE_DIRS = ("integration", "durable", "conformance", "browser")
LIVE_FIXTURES = {
    "live_stack",
    "demo_provider",
    "env_query_server",
    "broken_server",
    "http_demo_server",
    "oauth_server",
}
# Session stacks whose worker sweeps the shared test database (tests/durable stops its own at its end).
STACK_FIXTURES = {"live_stack"}


def _folder(item) -> str:
    parts = Path(str(item.fspath)).relative_to(TESTS).parts
    return parts[0] if len(parts) > 1 else ""


def _group(item) -> str:
    return "durable" if _folder(item) == "durable" else item.nodeid.split("::")[0]


def _allow_audit_truncate(sender, connection, **kwargs):
    # The audit table refuses TRUNCATE (migration 0007) unless the session opts in; the test process
    # flushes its database between transactional tests with TRUNCATE, so its connections opt in.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET clearloop.audit_truncate = 'allow'")


def pytest_configure(config):
    from django.db.backends.signals import connection_created

    connection_created.connect(_allow_audit_truncate, dispatch_uid="clearloop-audit-truncate")


def pytest_collection_modifyitems(items):
    for item in items:
        folder = _folder(item)
        # make test (pytest-xdist, --dist loadgroup): a file's tests stay in one process (its module
        # fixtures start once), and the durability tests all run in one process, one after another:
        # they kill workers and Redis on tight clocks (leases, heartbeats, the sweep), which two of
        # them at once on two cores missed.
        item.add_marker(pytest.mark.xdist_group(_group(item)))
        if folder == "browser":
            item.add_marker(pytest.mark.browser)
        if folder in LIVE_DIRS or LIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)
    # Browser tests drive Playwright's sync API, which runs an event loop in this thread while a
    # browser is open: run them after every asyncio test. And every file that starts the session's
    # live stack runs after every file that does not: the stack's worker sweeps this process's test
    # database every second and adopts any run that looks lost or abandoned, so a unit test's
    # backdated queued run (test_sweep_backlog) was driven by it mid-test, and its audit writes
    # deadlocked the test's flush. pytest-xdist hands out groups in this order, so once a process
    # has started its stack it only runs files that use one.
    with_stack = {_group(item) for item in items if STACK_FIXTURES & set(getattr(item, "fixturenames", ()))}
    items.sort(key=lambda item: (_folder(item) == "browser", _group(item) in with_stack))


@pytest.fixture(scope="session", autouse=True)
def _data_dir_per_worker():
    """Under pytest-xdist (``make check`` runs one process per core) every worker keeps its files
    (workspaces, logs, the demo database) in a data directory of its own: each worker has its own
    test database, where user and conversation ids start at 1 again, so shared paths would collide."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        yield
        return
    from django.conf import settings

    saved = settings.DATA_DIR, settings.WORKSPACE_ROOT
    settings.DATA_DIR = Path(settings.DATA_DIR) / worker
    settings.WORKSPACE_ROOT = settings.DATA_DIR / "workspaces"
    yield
    settings.DATA_DIR, settings.WORKSPACE_ROOT = saved


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """One test database per pytest process, so concurrent suites on one server never collide."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("postgresql"):
        db.setdefault("TEST", {})["NAME"] = f"test_{db['NAME']}_{os.getpid()}"


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, which it drops at the end: first end the connections still open
    on it (threads of this process that touched the database, a stack's process that outlived its
    stop). With one left open the drop failed ("being accessed by other users") and every
    ``make test`` left a database behind on the server."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    connection.close()


@pytest.fixture
def cast(db):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    users = get_user_model()
    alice = users.objects.create_user("alice", password="alice-pass")
    bob = users.objects.create_user("bob", password="bob-pass")
    ada = users.objects.create_superuser("ada", password="ada-pass")
    otto = users.objects.create_user("otto", password="otto-pass")
    Group.objects.get_or_create(name="auditors")[0].user_set.add(otto)
    return {"alice": alice, "bob": bob, "ada": ada, "otto": otto}


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    """daphne + Celery worker processes, shared by the integration tests of one session."""
    from django.conf import settings

    if settings.EMBEDDED_REDIS or not settings.USES_POSTGRES:
        pytest.skip("integration tests run against PostgreSQL and Redis (make test sets them)")
    import uuid

    from chatapp.devstack import Stack

    port = free_port()
    data_dir = tmp_path_factory.mktemp("stack")
    queue = f"clearloop-test-{uuid.uuid4().hex[:8]}"
    # Not set on this process's Celery app for the session: a test reaches this stack's queue through
    # ``_route_to_live_stack``, and a durability test set up before this fixture (make test's order
    # per pytest-xdist process varies) would have enqueued onto this queue name from then on, where
    # only this stack's sweep found its run and drove it without the test's crash switch.
    mcp_port = free_port()
    # The test process seeds rows (demo servers, workspace templates) the stack's processes use.
    settings.DEMO_MCP_PORT = mcp_port
    settings.DATA_DIR = data_dir
    settings.WORKSPACE_ROOT = data_dir / "workspaces"
    env = stack_env(
        port,
        data_dir,
        CLEARLOOP_QUEUE=queue,
        CLEARLOOP_DEMO_MCP_PORT=str(mcp_port),
        CLEARLOOP_WORKSPACE_ROOT=str(data_dir / "workspaces"),
    )
    stack = Stack(port=port, worker_concurrency=8, log_dir=data_dir / "logs", env=env, demo_mcp_port=mcp_port)
    from tests.durable.harness import celery_broker

    # Ping this stack's own broker while it starts (the durable stack's session may have pointed this
    # process's Celery app at its private Redis, where another worker could answer instead).
    with django_db_blocker.unblock(), celery_broker(settings.CELERY_BROKER_URL, queue):
        stack.start()
    stack.queue = queue
    stack.base_url = f"http://127.0.0.1:{port}"
    stack.demo_url = env["DEMO_MODEL_URL"]
    stack.data_dir = data_dir
    yield stack
    stack.stop()


@pytest.fixture
def demo_provider(transactional_db, live_stack, settings):
    from chatapp.services.providers import ensure_env_providers

    settings.DEMO_MODEL_URL = live_stack.demo_url
    ensure_env_providers()
    from chatapp.models import ProviderConfig

    return ProviderConfig.objects.get(name="demo")


@pytest.fixture
def demo_tools(demo_provider, cast):
    """The demo MCP servers, their policies and Alice's workspace files, as seed_demo sets them up."""
    from chatapp.services.demo_tools import seed_demo_tools

    seed_demo_tools(cast["alice"])
    return demo_provider


@pytest.fixture(autouse=True)
def _route_to_live_stack(request):
    """Tests on the live stack enqueue and publish from this process too: point its Celery app and its
    channel layer at the stack's broker, queue and Redis for the test (another module's fixtures may
    have pointed them elsewhere)."""
    if "live_stack" not in request.fixturenames:
        yield
        return
    from django.conf import settings
    from django.test import override_settings

    from chatapp import settings as configured
    from tests.durable.harness import celery_broker

    stack = request.getfixturevalue("live_stack")
    # The channel layer too: the durability tests' session fixture points this process's layer at
    # their private Redis for the rest of the session, where the live stack's daphne never listens.
    with (
        celery_broker(settings.CELERY_BROKER_URL, stack.queue),
        override_settings(CHANNEL_LAYERS=configured.CHANNEL_LAYERS),
    ):
        yield


@pytest.fixture(autouse=True)
def _live_runs_end_before_the_flush(request):
    """A transactional test's teardown TRUNCATEs every table. A run the live worker is still driving
    (a test that failed half-way, or one that does not wait for all its runs) deadlocks that TRUNCATE
    or writes rows into the next test. Stop every active run through the service, as the Stop button
    does, and wait until the worker has let go: a condition with a deadline, not a fixed sleep.
    (Set up after pytest-django's own autouse marker fixture, so this runs before its flush.)"""
    yield
    marker = request.node.get_closest_marker("django_db")
    if "live_stack" not in request.fixturenames or marker is None:
        return
    if not (marker.kwargs.get("transaction") or (marker.args and marker.args[0])):
        return
    import threading
    import time

    from django.db import connection

    from chatapp.models import ACTIVE_STATUSES, Run
    from chatapp.services.runs import request_cancel
    from chatapp.worker.liveness import is_alive

    def stop_and_wait() -> None:
        try:
            for run in Run.objects.filter(status__in=ACTIVE_STATUSES):
                request_cancel(run)
                if run.lease_owner and not is_alive(run.lease_owner):
                    # A run a test made "leased elsewhere" (no worker drives it, none will for the
                    # lease's hour): nothing would end it, and the wait below sat out its 60 s.
                    Run.objects.filter(pk=run.pk, lease_owner=run.lease_owner).update(
                        status=Run.Status.CANCELLED, lease_owner="", lease_expires_at=None
                    )
            deadline = time.monotonic() + 60
            while Run.objects.filter(status__in=ACTIVE_STATUSES).exists() and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            connection.close()

    # In a thread of its own: a browser test's thread runs Playwright's event loop, where the stop
    # signal's async_to_sync refuses to run.
    stopper = threading.Thread(target=stop_and_wait)
    stopper.start()
    stopper.join()


@pytest.fixture(autouse=True)
def _default_language_after_each_test():
    """A request through the language middleware activates the user's language in this thread and
    leaves it active (as Django's LocaleMiddleware does); a later test in the same process then read
    another test's language (a Chinese budget line in test_quotas after test_translations under
    pytest-xdist). Every test starts in the default language."""
    yield
    from django.utils import translation

    translation.deactivate()


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Users are created per test; the default hasher would dominate the run time (about 2 s per
    test here). The stacks the tests start hash the same way (tests/live_settings.py), so a user
    made here logs in there."""
    from tests.live_settings import PASSWORD_HASHERS

    settings.PASSWORD_HASHERS = PASSWORD_HASHERS


@pytest.fixture
def in_memory_channel_layer(settings):
    """One process, one event loop: the in-memory layer carries group messages (no Redis needed)."""
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()
