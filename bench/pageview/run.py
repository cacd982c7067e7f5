"""Opening a conversation in process: the CPU one daphne process spends rendering the page of a
conversation of N answered questions, with the bench upstream's plain answers and with answers shaped
like a real model's (``answers.py``). Not a test.

The browser's share of opening is ``bench.page.run --open N``; this is the server's, without the
network: the page is fetched through Django's test client, production settings, on a PostgreSQL
database of its own. Prints the CPU per open (p50), how much of it rendered the answers' markdown, and
``--profile FILE`` writes a cProfile of the measured opens.

    .venv/bin/python -m bench.pageview.run [--exchanges 40] [--opens 30] [--profile /tmp/open.prof]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench.pageview.answers import ROUND_EVENTS, round_of

ROOT = Path(__file__).resolve().parent.parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=40)
    parser.add_argument("--opens", type=int, default=30)
    parser.add_argument("--db", default="clearloop_pageview")
    parser.add_argument("--profile", default="", help="cProfile of the realistic conversation's opens")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.sendview.run import migrated_owner

    owner = migrated_owner(args.db, "opener")
    from django.test import Client

    from bench.cpu_per_call import measure
    from bench.pageview.answers import realistic
    from chatapp import markdown
    from tests.exchanges import answered

    plain, _ = answered(owner, args.exchanges, answer=lambda i: " ".join(f"w{n}" for n in range(200)))
    rich, _ = answered(owner, args.exchanges, answer=realistic)
    traced, _ = answered(owner, args.exchanges, answer=realistic, each=with_round)
    client = Client()
    client.force_login(owner)
    spent = _timed(markdown)
    conversations = (
        ("plain answers", plain),
        ("realistic answers", rich),
        ("realistic answers with their rounds", traced),
    )
    for label, convo in conversations:

        def open_page(_: int, convo_id: int = convo.pk) -> None:
            response = client.get(f"/c/{convo_id}/")
            assert response.status_code == 200, response.status_code

        for i in range(3):  # warm-up: imports, templates, the pool
            open_page(i)
        for state in ("first open in this process", "opened before"):
            forget = _forget if state.startswith("first") else None
            if forget:
                forget(0)
            else:
                open_page(0)  # the last first open left nothing kept
            spent.clear()
            profile = args.profile if label.endswith("rounds") and not forget else ""
            got = measure(open_page, args.opens, profile, after=forget)
            in_markdown = sum(spent) / args.opens
            # cProfile roughly triples the CPU of what it measures: say so on the line it inflates.
            profiled = " (under cProfile: not comparable)" if profile else ""
            print(
                f"{label}, {args.exchanges} exchanges, {state}{profiled}: CPU per open p50 {got.p50:.1f} ms"
                f" (mean {got.mean:.1f}), wall p50 {got.wall_p50:.1f} ms; rendering markdown"
                f" {in_markdown:.1f} ms per open"
            )


def with_round(run, i: int) -> None:
    """The run's round and events as the worker stores them (``answers.round_of``)."""
    from chatapp.models import Message, Round, RunEvent

    history = list(
        Message.objects.filter(conversation_id=run.conversation_id).order_by("id").values("role", "content")
    )
    Round.objects.create(run=run, **round_of(history, i))
    for seq, kind in enumerate(ROUND_EVENTS, start=1):
        RunEvent.objects.create(run=run, seq=seq, type=kind, payload={"round_index": 0}, durable=True)


def _forget(_: int) -> None:
    """The next open is as the first in its process: no rendered answer kept (a tree without the
    cache has nothing to forget)."""
    try:
        from chatapp import rendered
    except ImportError:
        return
    rendered.clear()


def _timed(markdown_module) -> list[float]:
    """Wrap the page's markdown renderer so each call's CPU is collected (ms)."""
    from chatapp.views import display

    spent: list[float] = []
    original = display.render_markdown

    def render(text: str) -> str:
        t0 = time.process_time()
        try:
            return original(text)
        finally:
            spent.append((time.process_time() - t0) * 1000)

    display.render_markdown = render
    return spent


if __name__ == "__main__":
    main()
