"""Benchmark: what clearloop adds to a streamed run, on the real topology. Not a test.

(a) time to first token added: the demo model's send time of the first content chunk vs the
    websocket client's receive time of the first delta frame, p50/p99 over --ttft-runs runs;
(b) 50, 100, 200 concurrent runs on ONE worker process (CLEARLOOP_WORKER_RUNS >= runs), demo
    model at 20 tokens/s: per-token added latency (frame receive time - chunk send time) p50/p99,
    lost tokens (sent by the model vs assembled from frames vs stored final text), worker peak RSS;
(c) host overhead per round excluding model and tool time: (run wall time - round durations -
    tool durations) / rounds, for the 000 §6 files scenario (3 rounds, 3 tool calls).

It needs PostgreSQL (DATABASE_URL; the bench uses its own database, ``<name>_bench``, created and
migrated if missing) and starts a private redis-server, daphne, one Celery worker and the demo model
in its own process (``bench/runs/model_server.py``, which stamps each chunk's send time).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/clearloop .venv/bin/python -m bench.runs.run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from chatapp.devstack import free_port  # noqa: E402 - after the path is set when run as a script

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "runs.json"
CSRF_SECRET = uuid.uuid4().hex  # 32 characters: Django accepts an unmasked secret
OVERHEAD_TARGET_MS = 15.0  # issue 15, target 5: host overhead per round, p50
FILES = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


# --- environment: database, redis, Django ---------------------------------------------------------


def bench_database_url() -> str:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/clearloop")
    if not base.startswith("postgres"):
        raise SystemExit("bench.runs needs PostgreSQL: set DATABASE_URL=postgres://...")
    head, _, name = base.rpartition("/")
    name = name.split("?")[0] or "clearloop"
    return f"{head}/{name}_bench"


def ensure_database(url: str) -> None:
    import psycopg

    head, _, name = url.rpartition("/")
    with psycopg.connect(f"{head}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def start_model(stack: Any, port: int, tps: float) -> None:
    from chatapp.devstack import port_open, wait_for

    argv = [sys.executable, "-m", "bench.runs.model_server", "--port", str(port), "--tps", str(tps)]
    proc = stack.spawn(f"model-{port}", argv, PYTHONPATH=str(ROOT))
    wait_for(lambda: port_open("127.0.0.1", port), 30, "the stamped demo model", proc)


class Bench:
    def __init__(self, data_dir: Path, concurrency: int, mode: str = "prod") -> None:
        self.data_dir = data_dir
        self.concurrency = concurrency
        self.port = free_port()
        self.redis_port = free_port()
        self.queue = f"clearloop-bench-{uuid.uuid4().hex[:8]}"
        self.db_url = bench_database_url()
        os.environ.update(
            {
                "DJANGO_SETTINGS_MODULE": "chatapp.settings",
                # prod: production settings (DEBUG off), as issue 15's figures are taken; demo: DEBUG=1.
                "DEBUG": "1" if mode == "demo" else "0",
                "SECRET_KEY": "bench-only-" + "k" * 50,
                "SECURE_SSL_REDIRECT": "0",
                "DATABASE_URL": self.db_url,
                "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
                "CLEARLOOP_DATA_DIR": str(data_dir),
                "CLEARLOOP_QUEUE": self.queue,
                "PORT": str(self.port),
                "CLEARLOOP_DEMO_MCP_PORT": str(free_port()),
                "CLEARLOOP_DEMO": "0",  # no demo MCP servers: bench/mcp measures MCP
                # One bench user stands for hundreds of users: the per-user limits do not apply.
                "CLEARLOOP_MAX_RUNS_IN_FLIGHT_PER_USER": "100000",
                "CLEARLOOP_MAX_SENDS_PER_MINUTE_PER_USER": "100000",
                "CLEARLOOP_MAX_WEBSOCKETS_PER_USER": "100000",
            }
        )

    def start(self) -> None:
        ensure_database(self.db_url)
        import django

        django.setup()
        from django.core.management import call_command

        from chatapp.devstack import Stack

        # One stack for everything this bench starts: its private Redis, the two stamped models,
        # daphne and the worker; ``stop`` ends them all.
        self.stack = Stack(
            port=self.port,
            worker_runs=self.concurrency,
            log_dir=self.data_dir / "logs",
            redis_port=self.redis_port,
        )
        self.stack.start_redis()
        call_command("migrate", verbosity=0)
        self.slow_port, self.fast_port = free_port(), free_port()
        start_model(self.stack, self.slow_port, 20)
        start_model(self.stack, self.fast_port, 400)
        self.seed()
        self.stack.start()
        self.base_url = f"http://127.0.0.1:{self.port}"

    def seed(self) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from chatapp.models import McpServer, ProviderConfig, ToolPolicy
        from chatapp.services.demo_tools import POLICIES, WORKSPACE_FILES

        McpServer.objects.all().delete()
        for pattern, tier, approval in POLICIES:
            ToolPolicy.objects.update_or_create(
                pattern=pattern, defaults={"tier": tier, "approval": approval}
            )
        users = get_user_model()
        self.user, _ = users.objects.get_or_create(username="bench")
        self.user.set_password("bench-pass-" + uuid.uuid4().hex)
        self.user.save()
        client = Client()
        client.force_login(self.user)
        self.session = client.cookies["sessionid"].value
        self.providers = {}
        for name, port in (("bench-20tps", self.slow_port), ("bench-fast", self.fast_port)):
            self.providers[name], _ = ProviderConfig.objects.update_or_create(
                name=name,
                defaults={
                    "kind": "openai_chat",
                    "preset": "demo",
                    "base_url": f"http://127.0.0.1:{port}/v1",
                    "model": "clearloop-demo",
                    "context_window": 32_000,
                    "max_output_tokens": 2048,
                    "is_demo": True,
                },
            )
        template = Path(self.data_dir) / "workspaces" / f"user-{self.user.pk}" / "template"
        for relative, content in WORKSPACE_FILES.items():
            path = template / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")

    def stop(self) -> None:
        if getattr(self, "stack", None) is not None:
            self.stack.stop()

    def worker_pid(self) -> int:
        return self.stack.procs["worker"].pid

    def stamps(self, port: int) -> dict[str, list[list[Any]]]:
        import httpx

        return httpx.get(f"http://127.0.0.1:{port}/stamps", timeout=30).json()

    def conversation(self, provider: str) -> int:
        from chatapp.models import Conversation

        return Conversation.objects.create(owner=self.user, provider=self.providers[provider]).pk


# --- one client: websocket + send ----------------------------------------------------------------


async def one_run(
    bench: Bench, http, conversation_id: int, text: str, setup: asyncio.Semaphore | None = None
) -> dict[str, Any]:
    """Open the conversation's websocket, send the message, record (receive time, frame) until the end.

    A socket the server closes (see "idle websockets" in docs/durable-runs.md) is reopened with the
    resume protocol, as the browser does; frames already seen are dropped and reconnects counted.
    """
    import websockets

    url = bench.base_url.replace("http://", "ws://") + f"/ws/conversations/{conversation_id}/"
    headers = {"Cookie": f"sessionid={bench.session}", "Origin": bench.base_url}
    frames: list[tuple[float, dict[str, Any]]] = []
    seen: set[tuple[int, int]] = set()
    last: dict[str, int] = {}
    reconnects = 0
    sent = False
    async with asyncio.timeout(300):
        while True:
            try:
                async with websockets.connect(url, additional_headers=headers, max_queue=None) as ws:
                    await ws.send(
                        json.dumps(
                            {"resume": last, "since_run": int(next(iter(last)))} if last else {"resume": {}}
                        )
                    )
                    if not sent:
                        # Connecting and sending go a few at a time: daphne's views and consumer
                        # setup each hold a PostgreSQL connection, and the server allows 100 in all.
                        async with setup or contextlib.nullcontext():
                            json.loads(await ws.recv())  # replay_done
                            await send_message(bench, http, conversation_id, text)
                        sent = True
                    while True:
                        frame = json.loads(await ws.recv())
                        if "run" not in frame:
                            continue
                        key = (frame["run"], frame["seq"])
                        if key in seen:
                            continue
                        seen.add(key)
                        last[str(frame["run"])] = max(last.get(str(frame["run"]), 0), frame["seq"])
                        frames.append((time.time(), frame))
                        if frame.get("type") in ("run_finished", "run_failed"):
                            return {
                                "conversation": conversation_id,
                                "text": text,
                                "frames": frames,
                                "reconnects": reconnects,
                            }
            except websockets.ConnectionClosedError:
                reconnects += 1


async def send_message(bench: Bench, http, conversation_id: int, text: str) -> None:
    token = CSRF_SECRET
    response = await http.post(
        f"/c/{conversation_id}/send/",
        data={"message": text},
        headers={"X-CSRFToken": token, "HX-Request": "true", "Referer": bench.base_url + "/"},
    )
    assert response.status_code == 200, (response.status_code, response.text[:300])


def http_client(bench: Bench):
    import httpx

    limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
    # A CSRF secret of our own as a plain cookie (as bench/browser does): with DEBUG off the server's
    # csrftoken cookie is Secure, and a client over plain http never sends it back.
    cookies = {"sessionid": bench.session, "csrftoken": CSRF_SECRET}
    return httpx.AsyncClient(base_url=bench.base_url, cookies=cookies, timeout=120, limits=limits)


def many(bench: Bench, provider: str, texts: list[str], parallel: int) -> list[dict[str, Any]]:
    conversations = [bench.conversation(provider) for _ in texts]
    return asyncio.run(_many(bench, conversations, texts, parallel))


async def _many(
    bench: Bench, conversations: list[int], texts: list[str], parallel: int
) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(parallel)
    setup = asyncio.Semaphore(8)

    async def guarded(http, cid, text):
        async with gate:
            return await one_run(bench, http, cid, text, setup)

    async with http_client(bench) as http:
        return await asyncio.gather(*(guarded(http, c, t) for c, t in zip(conversations, texts, strict=True)))


# --- (a) time to first token ----------------------------------------------------------------------


def ttft(bench: Bench, runs: int) -> dict[str, Any]:
    texts = [f"ttft probe {i} {uuid.uuid4().hex[:6]}" for i in range(runs)]
    results = many(bench, "bench-fast", texts, parallel=1)
    stamps = bench.stamps(bench.fast_port)
    added = []
    for result in results:
        first_send = stamps[result["text"]][0][0]
        first_recv = next(t for t, f in result["frames"] if f.get("type") == "delta" and f["data"]["text"])
        added.append((first_recv - first_send) * 1000)
    return {
        "websocket_reconnects": sum(r["reconnects"] for r in results),
        "runs": runs,
        "p50_ms": pct(added, 50),
        "p99_ms": pct(added, 99),
        "max_ms": max(added),
    }


# --- (b) concurrent runs at 20 tokens/s -----------------------------------------------------------


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.proc = psutil.Process(pid)
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.2)


def token_latencies(result: dict[str, Any], sent: list[list[Any]]) -> tuple[list[float], int, str]:
    """Per model chunk: receive time of the frame that completed it minus its send time."""
    deltas = [
        (t, f["data"]["text"]) for t, f in result["frames"] if f.get("type") == "delta" and f["data"]["text"]
    ]
    assembled = "".join(text for _, text in deltas)
    ends, total = [], 0
    for t, text in deltas:
        total += len(text)
        ends.append((total, t))
    latencies, position, k = [], 0, 0
    for send_time, piece in sent:
        position += len(piece)
        while k < len(ends) and ends[k][0] < position:
            k += 1
        if k == len(ends):
            break
        latencies.append((ends[k][1] - send_time) * 1000)
    lost = len(sent) - len(latencies)
    return latencies, lost, assembled


def concurrent(bench: Bench, n: int) -> dict[str, Any]:
    from chatapp.models import Run

    texts = [f"concurrency {n} run {i} {uuid.uuid4().hex[:6]} tell me about clearloop" for i in range(n)]
    sampler = RssSampler(bench.worker_pid())
    sampler.start()
    started = time.monotonic()
    results = many(bench, "bench-20tps", texts, parallel=n)
    wall = time.monotonic() - started
    sampler.done.set()
    stamps = bench.stamps(bench.slow_port)
    latencies: list[float] = []
    lost = mismatched = failed = 0
    reconnects = sum(r["reconnects"] for r in results)
    for result in results:
        sent = stamps.get(result["text"], [])
        lat, missing, assembled = token_latencies(result, sent)
        latencies += lat
        lost += missing
        run = Run.objects.filter(conversation_id=result["conversation"]).first()
        failed += run.status != "succeeded"
        mismatched += not (assembled == run.final_text == "".join(p for _, p in sent))
    return {
        "runs": n,
        "tokens": len(latencies) + lost,
        "added_p50_ms": pct(latencies, 50),
        "added_p99_ms": pct(latencies, 99),
        "lost_tokens": lost,
        "runs_with_text_mismatch": mismatched,
        "runs_not_succeeded": failed,
        "websocket_reconnects": reconnects,
        "worker_peak_rss_mb": sampler.peak / 2**20,
        "wall_s": wall,
    }


# --- (c) host overhead per round ------------------------------------------------------------------


def overhead(bench: Bench, runs: int) -> dict[str, Any]:
    from bench.browser.procs import Sampler
    from chatapp.models import Round, Run, ToolCall

    texts = [FILES + f" #{i}" for i in range(runs)]
    # CPU as well as wall time: on a shared machine the wall time moves with the other load, the CPU
    # our processes spend per run much less (utime+stime from /proc; PostgreSQL's backends of the
    # bench database included).
    head, _, name = bench.db_url.rpartition("/")
    pids = {n: bench.stack.procs[n].pid for n in ("worker", "web")}
    sampler = Sampler(pids, pg_dsn=f"{head}/postgres", pg_database=name).start()
    results = many(bench, "bench-fast", texts, parallel=1)
    cpu = sampler.stop()
    per_round, per_run_wall = [], []
    for result in results:
        run = Run.objects.get(conversation_id=result["conversation"])
        assert run.status == "succeeded", (run.status, run.error)
        rounds = list(Round.objects.filter(run=run))
        model_ms = sum(r.duration_ms or 0 for r in rounds)
        # Calls of one response run in parallel: the round's tool time is its slowest call.
        tool_ms: dict[int, float] = {}
        for call in ToolCall.objects.filter(run=run):
            tool_ms[call.round_index] = max(tool_ms.get(call.round_index, 0), call.duration_ms or 0)
        wall_ms = (run.finished_at - run.started_at).total_seconds() * 1000
        per_run_wall.append(wall_ms)
        per_round.append((wall_ms - model_ms - sum(tool_ms.values())) / len(rounds))
    return {
        "runs": runs,
        "rounds_per_run": 3,
        "overhead_per_round_p50_ms": pct(per_round, 50),
        "overhead_per_round_p99_ms": pct(per_round, 99),
        "run_wall_p50_ms": pct(per_run_wall, 50),
        # Whole runs, the send included: the worker's, daphne's and PostgreSQL's CPU ms per run.
        "cpu_ms_per_run": {k: round(v / runs, 1) for k, v in cpu.items()},
    }


def main(
    ttft_runs: int = 100,
    sizes: tuple[int, ...] = (50, 100, 200),
    overhead_runs: int = 30,
    mode: str = "prod",
    out: Path = RESULTS,
) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix="clearloop-bench-runs-"))
    bench = Bench(data_dir, concurrency=max(sizes, default=0) + 10, mode=mode)
    report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}}
    try:
        bench.start()
        many(bench, "bench-fast", ["warm up"] * 3, parallel=3)
        report["ttft"] = ttft(bench, ttft_runs)
        report["overhead"] = overhead(bench, overhead_runs)
        report["concurrent"] = [concurrent(bench, n) for n in sizes]
    finally:
        bench.stop()
    report["settings"] = {
        "coalesce_ms": 30,
        "db": "postgresql",
        "mode": mode,
        "model_tps_concurrent": 20,
        "logs": str(data_dir),
    }
    print_table(report)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten to {out}")
    return report


def print_table(report: dict[str, Any]) -> None:
    t, o = report["ttft"], report["overhead"]
    print(
        f"(a) TTFT added, {t['runs']} runs: p50 {t['p50_ms']:.1f} ms, p99 {t['p99_ms']:.1f} ms (target p50 <= 5)"
    )
    p50 = o["overhead_per_round_p50_ms"]
    print(
        f"(c) host overhead per round, {o['runs']} runs x 3 rounds, PostgreSQL, {report['settings']['mode']}: "
        f"p50 {p50:.1f} ms, p99 {o['overhead_per_round_p99_ms']:.1f} ms "
        f"(target 5: p50 <= {OVERHEAD_TARGET_MS:.0f} ms: {'met' if p50 <= OVERHEAD_TARGET_MS else 'not met'})"
    )
    if "cpu_ms_per_run" in o:
        print(f"    CPU ms per run: {o['cpu_ms_per_run']}")
    print(
        "(b) concurrent runs on one worker, model at 20 tokens/s (target at 200: p99 <= 100 ms, 0 lost, <= 400 MB)"
    )
    print(
        f"    {'runs':>5} {'tokens':>7} {'p50 ms':>8} {'p99 ms':>8} {'lost':>5} {'bad':>4} {'RSS MB':>7} {'wall s':>7} {'reconn':>6}"
    )
    for row in report["concurrent"]:
        print(
            f"    {row['runs']:>5} {row['tokens']:>7} {row['added_p50_ms']:>8.1f} {row['added_p99_ms']:>8.1f} "
            f"{row['lost_tokens']:>5} {row['runs_with_text_mismatch'] + row['runs_not_succeeded']:>4} "
            f"{row['worker_peak_rss_mb']:>7.0f} {row['wall_s']:>7.1f} {row['websocket_reconnects']:>6}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttft-runs", type=int, default=100)
    parser.add_argument("--sizes", default="50,100,200")
    parser.add_argument("--overhead-runs", type=int, default=30)
    parser.add_argument(
        "--mode", choices=("demo", "prod"), default="prod", help="prod: DEBUG=0 (default); demo: DEBUG=1"
    )
    parser.add_argument("--out", default=str(RESULTS), help="JSON file to write")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(",") if s)  # --sizes '': no (b)
    main(args.ttft_runs, sizes, args.overhead_runs, args.mode, Path(args.out).resolve())
