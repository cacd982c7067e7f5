"""Set-up of a bench target, run by the target's own interpreter in its own source tree. Not a test.

    python bench/browser/seed.py APP_DIR users N UPSTREAM_URL   -> {"users": [[id, session], ...]}
    python bench/browser/seed.py APP_DIR conversations ID,ID,... -> {"conversations": [id, ...]}
    python bench/browser/seed.py APP_DIR runs FILE.json          -> {"runs": [id, ...]}
      (FILE: [[conversation id, text], ...]; each is sent as the app's send view does, start_run,
      all in one transaction so their tasks are enqueued in one burst)
    python bench/browser/seed.py APP_DIR answered FILE.json     -> {"conversation": id}
      (FILE: {"owner": user id, "answers": [text, ...], "rounds": [fields, ...], "events": [type, ...]};
      a new conversation of the user's, each answer with its question, its succeeded run and, if
      given, its round and events written straight to the database by the tree's own
      ``tests/exchanges.py``, no model: a long conversation to open)

The target tree (``APP_DIR``) goes first on ``sys.path``, so a bench compares two checkouts with one
client. Users are created with one password hash (copied), sessions directly in the session store:
login is not what is measured. Each user's conversations use the provider ``bench`` (the fake
upstream) and offer no tools, like the reference kit's browser path.
"""

from __future__ import annotations

import json
import sys
import time


def users(count: int, upstream: str) -> dict:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.contrib.sessions.backends.db import SessionStore

    from chatapp.models import ProviderConfig

    ProviderConfig.objects.update_or_create(
        name="bench",
        defaults={
            "label": "bench upstream",
            "kind": "openai_chat",
            "preset": "openai",
            "base_url": upstream,
            "model": "fake-model",
            "api_key_env": "BENCH_UPSTREAM_KEY",
            "context_window": 128_000,
            "max_output_tokens": 4096,
            "enabled": True,
        },
    )
    model = get_user_model()
    hashed = make_password("bench-not-a-secret")
    out = []
    for i in range(count):
        user, _ = model.objects.get_or_create(username=f"benchu{i}", defaults={"password": hashed})
        store = SessionStore()
        store["_auth_user_id"] = str(user.pk)
        store["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
        store["_auth_user_hash"] = user.get_session_auth_hash()
        store.create()
        out.append([user.pk, store.session_key])
    return {"users": out}


def conversations(user_ids: list[int]) -> dict:
    from chatapp.models import Conversation, ProviderConfig

    provider = ProviderConfig.objects.get(name="bench")
    off = {
        "servers": {},
        "tools": dict.fromkeys(
            ("read_file", "search_files", "write_file", "append_file", "query_database"), False
        ),
    }
    made = [Conversation(owner_id=uid, provider=provider, tool_settings=off) for uid in user_ids]
    return {"conversations": [c.pk for c in Conversation.objects.bulk_create(made)]}


def runs(path: str) -> dict:
    from django.db import transaction

    from chatapp.models import Conversation
    from chatapp.services.runs import start_run

    pairs = json.loads(open(path, encoding="utf-8").read())
    convos = Conversation.objects.in_bulk([cid for cid, _ in pairs])
    # One transaction: every run's task is enqueued on its commit, so the worker gets them in one
    # burst (sent one by one, 200 sends took a minute on the loaded machine and never overlapped).
    with transaction.atomic():
        ids = [start_run(convos[cid], text).pk for cid, text in pairs]
    return {"runs": ids, "committed": time.time()}  # the tasks are enqueued on this commit


def answered(path: str) -> dict:
    from django.contrib.auth import get_user_model

    from chatapp.models import Round, RunEvent
    from tests.exchanges import answered as written  # the target tree's own builder of such rows

    spec = json.loads(open(path, encoding="utf-8").read())
    rounds, events = spec.get("rounds"), spec.get("events", [])

    def each(run, i: int) -> None:
        if rounds:
            Round.objects.create(run=run, **rounds[i])
        for seq, kind in enumerate(events, start=1):
            RunEvent.objects.create(run=run, seq=seq, type=kind, payload={"round_index": 0}, durable=True)

    owner = get_user_model().objects.get(pk=spec["owner"])
    convo, _ = written(owner, len(spec["answers"]), answer=lambda i: spec["answers"][i], each=each)
    return {"conversation": convo.pk}


def main() -> None:
    app_dir, command, *args = sys.argv[1:]
    sys.path.insert(0, app_dir)
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatapp.settings")
    import django

    django.setup()
    if command == "users":
        result = users(int(args[0]), args[1])
    elif command == "conversations":
        result = conversations([int(x) for x in args[0].split(",") if x])
    elif command == "runs":
        result = runs(args[0])
    elif command == "answered":
        result = answered(args[0])
    else:
        raise SystemExit(f"unknown command {command}")
    print("BENCH-JSON " + json.dumps(result))


if __name__ == "__main__":
    main()
