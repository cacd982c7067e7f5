"""Benchmark: the chat page in Chromium, from the click on Send to what the user sees. Not a test.

``bench.browser`` measures the browser path with a client of its own that speaks the page's protocol
(the POST, the websocket); this one drives the real page (Debian's chromium through Playwright: htmx,
``chat.js``, the DOM) on the same topology (``manage.py runall`` on its own PostgreSQL database, the
fake upstream of ``bench/browser/upstream.py`` stamping every chunk's send time), so what the page
itself adds shows. Per send, in the host's wall clock (``performance.timeOrigin + now()`` in the page,
``time.time()`` in the upstream):

- echo: click -> the user's own message is on the page;
- added TTFT: click -> the first token is on the page, minus the upstream's own time to its first
  chunk; split into before the model (click -> the upstream has the request) and relay (the upstream
  sends the first chunk -> the page shows it);
- last token: the upstream sends the last chunk -> the page shows it.

Each figure is taken when the DOM changes and again in the next animation frame ("painted"). The
page's sends alternate with the same sends from ``bench.browser``'s protocol client on another
conversation of the same user (the "client" rows), so the difference is the page's own. ``--load N``
adds N other users streaming answers at ``--load-delay`` ms per token the whole time (a busy server).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/clearloop .venv/bin/python -m bench.page.run \
        --sends 20 --load 0,20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.browser.client import BrowserUser  # noqa: E402
from bench.browser.run import Target  # noqa: E402
from bench.browser.upstream import expected_text  # noqa: E402
from bench.page.opening import measure_open, print_open  # noqa: E402
from chatapp.devstack import free_port, port_open, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OBSERVER = (Path(__file__).parent / "observer.js").read_text()
CHROMIUM = "/usr/bin/chromium"


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


class Stack:
    """The fake upstream and one clearloop target, as ``bench.browser`` starts them."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.data_root = Path(tempfile.mkdtemp(prefix="clearloop-bench-page-"))
        port = free_port()
        log = open(self.data_root / "upstream.log", "ab")  # noqa: SIM115 - owned by the child
        self.upstream = subprocess.Popen(
            [sys.executable, "-m", "bench.browser.upstream", "--port", str(port)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.up_base = f"http://127.0.0.1:{port}"
        wait_for(lambda: port_open("127.0.0.1", port), 60, "the fake upstream", self.upstream)
        self.target = Target(
            "page",
            Path(args.app).resolve(),
            args.mode,
            1,
            None,
            self.up_base + "/v1",
            self.data_root / "page",
        )
        # The home page's box starts conversations with the default model: the fake upstream's.
        self.target.extra_env["CLEARLOOP_DEFAULT_PROVIDER"] = "bench"
        self.target.start(max(args.load, default=0) + 1, fresh_db=True)

    def stamps(self) -> dict[str, Any]:
        return httpx.get(self.up_base + "/stamps", timeout=30).json()

    def stop(self) -> None:
        self.target.stop()
        os.killpg(self.upstream.pid, 15)
        self.upstream.wait(10)


async def open_page(browser: Any, stack: Stack, session: str, conversation: int) -> Any:
    base = stack.target.base_url
    context = await browser.new_context(base_url=base, viewport={"width": 1440, "height": 900})
    await context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
    await context.add_init_script(OBSERVER)
    page = await context.new_page()
    await page.goto(f"/c/{conversation}/")
    await wait_live(page)
    return page


async def wait_live(page: Any) -> None:
    """The page's socket is open (its state says "Live")."""
    await page.wait_for_function(
        "() => { const s = document.getElementById('ws-state'); return s && s.dataset.state === 'live'; }"
    )


async def page_send(page: Any, rid: str, text: str, last: str, args: argparse.Namespace) -> dict[str, float]:
    await page.evaluate("([r, t, l]) => window.__benchSend(r, t, l)", [rid, text, last])
    await page.wait_for_function(
        "r => { const m = window.__benchMarks[r]; return m && m.full_painted && m.echo_painted; }",
        arg=rid,
        timeout=args.timeout * 1000,
    )
    marks = {k: v / 1000 for k, v in (await page.evaluate("r => window.__benchMarks[r]", rid)).items()}
    if args.requests:
        print(rid, await page.evaluate("r => window.__benchRequests(r)", rid))
    return marks


async def start_send(page: Any, rid: str, text: str, last: str, args: argparse.Namespace) -> dict[str, float]:
    """A first message from the home page (the user's draft conversation, its socket open as a person
    who has just opened the app and typed would find it): answered on the same page, whose address
    becomes the conversation's."""
    await page.goto("/")
    await wait_live(page)
    marks = await page_send(page, rid, text, last, args)
    if not re.search(r"/c/\d+/$", page.url):
        raise RuntimeError(f"the home page's first message left the address at {page.url}")
    return marks


def figures(marks: dict[str, float], up: dict[str, Any], painted: bool) -> dict[str, float]:
    """One send's figures, ms (``painted``: the animation-frame marks, else the DOM's)."""
    sfx = "_painted" if painted else ""
    own = up["sends"][0] - up["recv"]
    return {
        "echo": (marks["echo" + sfx] - marks["click"]) * 1000,
        "added_ttft": (marks["first" + sfx] - marks["click"] - own) * 1000,
        "before_model": (up["recv"] - marks["click"]) * 1000,
        "relay": (marks["first" + sfx] - up["sends"][0]) * 1000,
        "last_token": (marks["full" + sfx] - up["sends"][-1]) * 1000,
    }


def page_split(marks: dict[str, float], up: dict[str, Any]) -> dict[str, float]:
    """Where a page send's time goes, ms: the request (htmx, the XHR's resource timing), the answer's
    swap, and the first text frame (its arrival on the socket, then on the page)."""
    spans = {
        "click>htmx": ("click", "beforeRequest"),
        "htmx>xhr": ("beforeRequest", "xhr_start"),
        "xhr>answer": ("xhr_start", "xhr_response"),
        "answer>swapped": ("xhr_end", "afterSwap"),
        "frame>shown": ("frame", "first"),
        "swapped>shown": ("afterSwap", "first"),
    }
    out = {k: (marks[b] - marks[a]) * 1000 for k, (a, b) in spans.items() if a in marks and b in marks}
    if "frame" in marks:
        out["upstream>frame"] = (marks["frame"] - up["sends"][0]) * 1000
    return out


def client_figures(stream: dict[str, Any], up: dict[str, Any]) -> dict[str, float]:
    own = up["sends"][0] - up["recv"]
    return {
        "echo": (stream["t_answered"] - stream["t_post"]) * 1000,  # its POST's answer holds the message
        "added_ttft": (stream["t_first"] - stream["t_post"] - own) * 1000,
        "before_model": (up["recv"] - stream["t_post"]) * 1000,
        "relay": (stream["t_first"] - up["sends"][0]) * 1000,
        "last_token": (stream["t_last"] - up["sends"][-1]) * 1000,
    }


async def background(users: list[BrowserUser], stack: Stack, delay: int, stop: asyncio.Event) -> int:
    """Each user sends again as soon as its answer ends, until ``stop``: a steady load of streams."""
    done = 0

    async def loop(user: BrowserUser) -> None:
        nonlocal done
        async with httpx.AsyncClient(base_url=stack.target.base_url, timeout=120) as http:
            while not stop.is_set():
                rid = "bg" + uuid.uuid4().hex[:10]
                await user.message(http, rid, f"Busy. rid={rid} delay={delay} tokens=200")
                done += 1

    await asyncio.gather(*(loop(u) for u in users))
    return done


HOME_STEPS = ("beforeRequest", "xhr_response", "afterSwap", "ws_open", "frame", "first_painted")


async def measure_load(browser: Any, stack: Stack, load: int, args: argparse.Namespace) -> dict[str, Any]:
    t = stack.target
    ids = ",".join(str(uid) for uid, _ in t.users[: load + 1])
    convos = t.seed("conversations", ids + "," + str(t.users[0][0]))["conversations"]
    session = t.users[0][1]
    page = await open_page(browser, stack, session, convos[0])
    probe = BrowserUser(t.base_url, session, convos[-1], args.timeout)
    others = [
        BrowserUser(t.base_url, s, c, args.timeout)
        for (_, s), c in zip(t.users[1 : load + 1], convos[1:-1], strict=True)
    ]
    for user in [probe, *others]:
        await user.connect()
    stop = asyncio.Event()
    busy = asyncio.create_task(background(others, stack, args.load_delay, stop))
    if others:
        await asyncio.sleep(3)  # the load reaches its steady state (each answer takes ~2 s at 10 ms/token)
    sends = await measured_sends(page, probe, stack, args)
    stop.set()
    background_sends = await busy
    for user in [probe, *others]:
        await user.close()
    await page.context.close()
    return {"load": load, "background_sends": background_sends, "sends": args.sends} | tables(
        sends, stack.stamps()
    )


async def measured_sends(page: Any, probe: BrowserUser, stack: Stack, args: argparse.Namespace) -> list:
    """The page's sends alternating with the protocol client's, then the home page's; the first of
    each kind warms up and is left out."""
    last = expected_text(args.tokens).split()[-1]
    sends: list[tuple[str, str, Any]] = []

    def text(rid: str) -> str:
        return f"Say something. rid={rid} delay={args.delay} tokens={args.tokens}"

    async with httpx.AsyncClient(base_url=stack.target.base_url, timeout=args.timeout) as http:
        for i in range(args.sends + 1):
            for kind in ("page", "client"):
                rid = f"{kind[0]}{i}x{uuid.uuid4().hex[:8]}"
                if kind == "page":
                    got: Any = await page_send(page, rid, text(rid), last, args)
                else:
                    got = (await probe.message(http, rid, text(rid))).as_dict()
                if i:
                    sends.append((kind, rid, got))
                await asyncio.sleep(0.2)
        for i in range(args.start + 1 if args.start else 0):
            rid = f"s{i}x{uuid.uuid4().hex[:8]}"
            got = await start_send(page, rid, text(rid), last, args)
            if i:
                sends.append(("start", rid, got))
            await asyncio.sleep(0.2)
    return sends


def tables(sends: list[tuple[str, str, Any]], stamps: dict[str, Any]) -> dict[str, Any]:
    rows: dict[str, list[dict[str, float]]] = {"page (DOM)": [], "page (painted)": [], "client": []}
    splits: list[dict[str, float]] = []
    for kind, rid, got in sends:
        up = stamps[rid]
        if kind == "page":
            rows["page (DOM)"].append(figures(got, up, painted=False))
            rows["page (painted)"].append(figures(got, up, painted=True))
            splits.append(page_split(got, up))
        elif kind == "start":
            home = figures(got, up, painted=True)
            home |= {k: (got[k] - got["click"]) * 1000 for k in HOME_STEPS if k in got}
            rows.setdefault("home page (painted)", []).append(home)
        elif got["status"] == "run_finished":
            rows["client"].append(client_figures(got, up))
    return {"rows": summary(rows), "page_split_p50": summary({"split": splits})["split"]}


def summary(rows: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, items in rows.items():
        keys = dict.fromkeys(k for item in items for k in item)
        out[name] = {"n": len(items)} | {
            f"{k}_{q}": round(v, 1)
            for k in keys
            for q in (50, 95)
            if (v := pct([x[k] for x in items if k in x], q)) is not None
        }
    return out


def print_report(result: dict[str, Any]) -> None:
    print(
        f"\n{result['load']} other users streaming ({result['background_sends']} answers meanwhile), {result['sends']} sends each:"
    )
    cols = ("echo", "added_ttft", "before_model", "relay", "last_token")
    print(f"    {'':20}" + "".join(f"{c + ' p50/p95':>24}" for c in cols))
    for name, row in result["rows"].items():
        cells = "".join(
            f"{row.get(c + '_50', float('nan')):>15.1f} /{row.get(c + '_95', float('nan')):>7.1f}"
            for c in cols
        )
        print(f"    {name:20}{cells}   (n={row['n']})")
    split = result["page_split_p50"]
    print(
        "    the page's sends, p50 ms: "
        + ", ".join(f"{k[:-3]} {v}" for k, v in split.items() if k.endswith("_50"))
    )
    home = result["rows"].get("home page (painted)")
    if home:
        print(
            "    the home page's sends, p50 ms after the click: "
            + ", ".join(f"{k} {home.get(k + '_50', '-')}" for k in HOME_STEPS)
        )


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    stack = Stack(args)
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "args": vars(args),
        "results": [],
    }
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            for load in args.load:
                result = await measure_load(browser, stack, load, args)
                report["results"].append(result)
                print_report(result)
            if args.open:
                report["open"] = await measure_open(
                    browser, stack, args.open, args.open_loads, args.timeout, args.open_answers
                )
                print_open(report["open"])
            await browser.close()
    finally:
        stack.stop()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=20, help="measured sends of each kind per load")
    parser.add_argument("--load", default="0,20", help="other users streaming meanwhile, comma separated")
    parser.add_argument("--load-delay", type=int, default=10, help="their ms per token")
    parser.add_argument("--delay", type=int, default=0, help="ms per token of the measured answers")
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument(
        "--start",
        type=int,
        default=0,
        help="also N first messages from the home page's box (new conversations)",
    )
    parser.add_argument(
        "--open",
        type=int,
        default=0,
        help="also open a conversation of N exchanges (--open-loads times): the browser's time",
    )
    parser.add_argument("--open-loads", type=int, default=10)
    parser.add_argument(
        "--open-answers",
        choices=("plain", "realistic"),
        default="plain",
        help="the opened conversation's answers: the fake upstream's words, or shaped like a real model's",
    )
    parser.add_argument("--app", default=str(ROOT), help="the source tree to serve (default: this one)")
    parser.add_argument("--mode", choices=("demo", "prod"), default="prod")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--requests", action="store_true", help="print the requests each page send made")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    args.load = [int(x) for x in args.load.split(",") if x.strip()]
    report = asyncio.run(main_async(args))
    out = (
        Path(args.out)
        if args.out
        else ROOT / "bench" / "results" / f"page-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
