"""The send view in process: its statements and the CPU it spends per send. Not a test.

What one daphne process spends on each message a user sends (``POST /c/<id>/send/``), without the
network, the worker or the browser: the view is called through Django's test client, production
settings (``DEBUG`` off), on a PostgreSQL database of its own. The worker is not running, so each
run is marked finished after its send (the next send would be refused while one is active). Prints
the statements of one send and the CPU per send (p50 over ``--sends``); ``--profile FILE`` writes a
cProfile of the measured sends.

    .venv/bin/python -m bench.sendview.run [--sends 200] [--profile /tmp/send.prof]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent


def configure(db_name: str) -> None:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/clearloop")
    os.environ.update(
        {
            "DATABASE_URL": base.rpartition("/")[0] + "/" + db_name,
            "DEBUG": "0",
            "SECRET_KEY": "bench-only-" + "k" * 50,
            "SECURE_SSL_REDIRECT": "0",
            "ALLOWED_HOSTS": "testserver",
            "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13"),
            "CLEARLOOP_MAX_SENDS_PER_MINUTE_PER_USER": "100000",
            "BENCH_UPSTREAM_KEY": "sk-bench-not-a-secret",
            "DJANGO_SETTINGS_MODULE": "chatapp.settings",
        }
    )
    sys.path.insert(0, str(ROOT))


def fresh_database(db_name: str) -> None:
    import psycopg

    admin = os.environ["DATABASE_URL"].rpartition("/")[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{db_name}"')


def migrated_owner(db_name: str, username: str) -> Any:
    """Django set up on a new database ``db_name``, migrated, with one user: the in-process benches'
    start (``steprun``, ``stream``)."""
    configure(db_name)
    fresh_database(db_name)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return get_user_model().objects.create_user(username, password="x")  # noqa: S106 - a bench's own database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=200)
    parser.add_argument("--db", default="clearloop_sendview")
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    configure(args.db)
    fresh_database(args.db)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.cpu_per_call import measure

    call_command("migrate", verbosity=0)
    sys.path.insert(0, str(ROOT / "bench" / "browser"))
    import seed  # bench/browser/seed.py: the bench's provider, users and conversations

    ((uid, _),) = seed.users(1, "http://127.0.0.1:9/v1")["users"]
    (cid,) = seed.conversations([uid])["conversations"]
    from django.contrib.auth import get_user_model

    from chatapp.models import Conversation, Run

    client = Client()
    client.force_login(get_user_model().objects.get(pk=uid))

    def send(i: int) -> None:
        response = client.post(f"/c/{cid}/send/", {"message": f"hello {i}"}, HTTP_HX_REQUEST="true")
        assert response.status_code == 200, response.status_code
        Run.objects.filter(conversation_id=cid).update(status="succeeded")
        Conversation.objects.filter(pk=cid).update(active_run=None)

    for i in range(5):  # warm-up: imports, templates, the pool
        send(i)
    with CaptureQueriesContext(connection) as queries:
        client.post(f"/c/{cid}/send/", {"message": "counted"}, HTTP_HX_REQUEST="true")
    Run.objects.filter(conversation_id=cid).update(status="succeeded")
    Conversation.objects.filter(pk=cid).update(active_run=None)
    print(f"statements of one send: {len(queries.captured_queries)}")
    for q in queries.captured_queries:
        print("   ", q["sql"][:160] if not os.environ.get("BENCH_FULL_SQL") else q["sql"])

    def reset(_: int) -> None:
        Run.objects.filter(conversation_id=cid).update(status="succeeded")
        Conversation.objects.filter(pk=cid).update(active_run=None)

    def post(i: int) -> None:
        client.post(f"/c/{cid}/send/", {"message": f"hello {i}"}, HTTP_HX_REQUEST="true")

    p50, mean, wall = measure(post, args.sends, args.profile, after=reset)
    print(
        f"CPU per send over {args.sends} sends: p50 {p50:.2f} ms, mean {mean:.2f} ms; wall p50 {wall:.2f} ms"
    )


if __name__ == "__main__":
    main()
