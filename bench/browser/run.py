"""Benchmark: the browser path, POST of a message -> text frames on the websocket. Not a test.

Starts the fake upstream (``bench/browser/upstream.py``), then each target exactly as ``make run``
ends: ``manage.py runall`` (daphne, the Celery worker, its own embedded redis-server), on its own
PostgreSQL database. For each inter-token delay and each C, C browser users (one Django user, one
session, one conversation and one websocket each) send a message at the same moment, ``--batches``
times after one warm-up batch; a direct client of the same upstream gives the floor. Several
targets (``--target label=source-tree``) are measured cell by cell, interleaved, so a before/after
comparison sees the same machine load.

Printed per cell: added TTFT (POST -> first text frame, minus the upstream's own time to its first
chunk) p50/p95, split into before the model call (POST -> upstream receives the request) and relay
(upstream sends the first chunk -> browser receives it); per-token lag p50/p99; aggregate tokens/s;
CPU ms per 200-token stream by process (daphne, worker, redis, the PostgreSQL backends of the
target's database, runall and its helpers); peak RSS; failures. Then the saturation point
(aggregate tokens/s where added TTFT p50 passes 500 ms). JSON goes to ``bench/results/``.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/clearloop .venv/bin/python -m bench.browser.run \
        --cells 1,10,20,50,100 --delays 0,10 --mode prod
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.browser import floor, netstat  # noqa: E402
from bench.browser.client import BrowserUser, direct_message  # noqa: E402
from bench.browser.procs import Sampler, cpu_ms  # noqa: E402
from bench.browser.spans import print_split, read_spans, split  # noqa: E402
from bench.browser.stats import cell_figures, saturation, targets_2_and_3  # noqa: E402
from chatapp.devstack import free_port, port_open, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
SEED = Path(__file__).resolve().parent / "seed.py"


def database_url(label: str) -> str:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/clearloop")
    if not base.startswith("postgres"):
        raise SystemExit("bench.browser needs PostgreSQL: set DATABASE_URL=postgres://...")
    head, _, name = base.rpartition("/")
    return f"{head}/{name.split('?')[0]}_browser_{label}"


def ensure_database(url: str, fresh: bool) -> None:
    import psycopg

    head, _, name = url.rpartition("/")
    with psycopg.connect(f"{head}/postgres", autocommit=True) as conn:
        if fresh:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


@dataclass
class Target:
    label: str
    app_dir: Path
    mode: str
    workers: int
    concurrency: int | None
    upstream: str
    data_dir: Path
    db_url: str = ""
    port: int = 0
    proc: subprocess.Popen | None = None
    pids: dict[str, int] = field(default_factory=dict)
    users: list[list[Any]] = field(default_factory=list)
    extra_argv: list[str] = field(default_factory=list)  # more runall options (e.g. --threads)
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def python(self) -> str:
        own = self.app_dir / ".venv" / "bin" / "python"
        return str(own) if own.exists() else sys.executable

    def env(self) -> dict[str, str]:
        drop = {"REDIS_URL", "DJANGO_SETTINGS_MODULE", "DB_CONN_MAX_AGE", "CLEARLOOP_QUEUE", "PYTHONPATH"}
        env = {k: v for k, v in os.environ.items() if k not in drop}
        return (
            env
            | {
                "DATABASE_URL": self.db_url,
                "DEBUG": "1" if self.mode == "demo" else "0",
                "SECRET_KEY": "bench-only-" + "k" * 50,
                "SECURE_SSL_REDIRECT": "0",
                "CLEARLOOP_EMBEDDED_REDIS_PORT": str(self.redis_port),
                "CLEARLOOP_DEMO_MCP_PORT": str(free_port()),
                "CLEARLOOP_DATA_DIR": str(self.data_dir),
                "BENCH_UPSTREAM_KEY": "sk-bench-not-a-secret",
                # One simulated user sends a message as soon as the last answer ended, far above what a
                # person does: the per-user send rate limit would refuse the bench, not measure it.
                "CLEARLOOP_MAX_SENDS_PER_MINUTE_PER_USER": "100000",
                "PORT": str(self.port),
            }
            | self.extra_env
        )

    def manage(self, *argv: str) -> str:
        out = subprocess.run(
            [self.python, *argv],
            cwd=self.app_dir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if out.returncode:
            raise SystemExit(
                f"{self.label}: {' '.join(argv)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
            )
        return out.stdout

    def seed(self, *argv: str) -> dict[str, Any]:
        out = self.manage(str(SEED), str(self.app_dir), *argv)
        line = next(x for x in out.splitlines() if x.startswith("BENCH-JSON "))
        return json.loads(line[len("BENCH-JSON ") :])

    def start(self, users: int, fresh_db: bool) -> None:
        self.port, self.redis_port = free_port(), free_port()
        self.db_url = database_url(self.label)
        ensure_database(self.db_url, fresh_db)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.manage("manage.py", "migrate", "--noinput")
        self.users = self.seed("users", str(users), self.upstream)["users"]
        argv = [self.python, "manage.py", "runall", "--port", str(self.port)]
        if self.concurrency:
            argv += ["--concurrency", str(self.concurrency)]
        if self.workers > 1:
            argv += ["--workers", str(self.workers)]
        argv += self.extra_argv
        log = open(self.data_dir / "runall.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            argv,
            cwd=self.app_dir,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while b"clearloop is up" not in (self.data_dir / "runall.log").read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.label}: runall did not come up, see {self.data_dir / 'runall.log'}")
            time.sleep(0.2)
        self.pids = {"runall": self.proc.pid}
        workers = 0
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            cmd = " ".join(child.cmdline())
            if "daphne" in cmd:
                self.pids["daphne"] = child.pid
            elif "celery" in cmd:
                workers += 1
                self.pids["worker" if workers == 1 else f"worker{workers}"] = child.pid
            elif "redis-server" in cmd:
                self.pids["redis"] = child.pid
            else:
                self.pids[f"other-{child.pid}"] = child.pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)


def group(name: str) -> str:
    if name.startswith("worker"):
        return "worker"
    if name in ("daphne", "redis", "postgres"):
        return name
    return "other"


async def _batch_browser(target: Target, users: list[BrowserUser], delay: int, tokens: int) -> list[dict]:
    async with httpx.AsyncClient(
        base_url=target.base_url, timeout=120, limits=httpx.Limits(max_connections=1000)
    ) as http:
        rids = [uuid.uuid4().hex[:12] for _ in users]
        texts = [f"Say something. rid={rid} delay={delay} tokens={tokens}" for rid in rids]
        streams = await asyncio.gather(
            *(u.message(http, r, t) for u, r, t in zip(users, rids, texts, strict=True))
        )
    return [s.as_dict() for s in streams]


async def _batch_direct(upstream: str, c: int, delay: int, tokens: int, timeout: float) -> list[dict]:
    async with httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=1000)) as http:
        rids = [uuid.uuid4().hex[:12] for _ in range(c)]
        texts = [f"rid={rid} delay={delay} tokens={tokens}" for rid in rids]
        streams = await asyncio.gather(
            *(direct_message(http, upstream, r, t, timeout) for r, t in zip(rids, texts, strict=True))
        )
    return [s.as_dict() for s in streams]


async def _connect(target: Target, c: int, timeout: float) -> list[BrowserUser]:
    ids = ",".join(str(uid) for uid, _ in target.users[:c])
    conversations = target.seed("conversations", ids)["conversations"]
    users = [
        BrowserUser(target.base_url, s, cid, timeout)
        for (_, s), cid in zip(target.users[:c], conversations, strict=True)
    ]
    gate = asyncio.Semaphore(20)

    async def connect(user: BrowserUser) -> None:
        async with gate:
            await user.connect()

    await asyncio.gather(*(connect(u) for u in users))
    return users


def stop_probes(target: Target, args) -> dict[str, Any]:
    """Stop latency: a 20 tokens/s answer is stopped after 0.5 s of text, ``args.stop_probes`` times."""

    async def go() -> list[dict[str, Any]]:
        users = await _connect(target, 1, args.timeout)
        out = []
        async with httpx.AsyncClient(base_url=target.base_url, timeout=60) as http:
            for i in range(args.stop_probes):
                text = f"Say something. rid=stop{i}{uuid.uuid4().hex[:6]} delay=50 tokens=400"
                try:
                    out.append(await users[0].stop_probe(http, "", text, 0.5))
                except (TimeoutError, httpx.HTTPError, TypeError) as exc:
                    out.append({"error": f"{type(exc).__name__}: {exc}"})
        await users[0].close()
        return out

    probes = asyncio.run(go())
    failed = [p["error"] for p in probes if "error" in p]
    probes = [p for p in probes if "error" not in p]
    if not probes:
        return {"probes": 0, "failed": failed}
    ended = [p["ended_ms"] for p in probes]
    return {
        "probes": len(probes),
        "failed": failed,
        "stop_to_end_p50_ms": statistics.median(ended),
        "stop_to_end_max_ms": max(ended),
        "last_text_after_stop_max_ms": max(p["last_text_after_stop_ms"] for p in probes),
        "finals": sorted({p["final"] for p in probes}),
    }


def stamps(upstream_base: str) -> dict[str, Any]:
    return httpx.get(upstream_base + "/stamps", timeout=30).json()


def run_cell(target: Target | None, upstream_base: str, c: int, delay: int, args) -> dict[str, Any]:
    """One cell: warm-up batch, then ``batches`` measured batches; CPU over the measured ones only."""
    upstream = upstream_base + "/v1"

    async def go() -> tuple[list[list[dict]], dict[str, float], Sampler | None, float, float, dict[str, int]]:
        users = await _connect(target, c, args.timeout) if target else []
        batch = (
            (lambda: _batch_browser(target, users, delay, args.tokens))
            if target
            else (lambda: _batch_direct(upstream, c, delay, args.tokens, args.timeout))
        )
        await batch()  # warm-up
        sampler = None
        spies = start_profiles(target, c, delay, args)
        if target:
            db = target.db_url.rpartition("/")[2]
            sampler = Sampler(dict(target.pids), target.db_url, db).start()
        started, own_cpu, kernel = time.monotonic(), time.process_time(), netstat.tcp_ext()
        upstream_cpu = cpu_ms(args.upstream_pid) or 0.0
        results = []
        for _ in range(batches_for(c, args)):
            results.append(await batch())
            await asyncio.sleep(0.05)
        wall = time.monotonic() - started
        refused = netstat.since(kernel)
        # This process's CPU: for the direct cell, the floor of reading the same streams in Python
        # with httpx (what the worker's provider client does before anything of ours).
        own_cpu = (time.process_time() - own_cpu) * 1000
        used = sampler.stop() if sampler else {}
        # The fake model's own CPU: on a 2-core machine it shares the cores with everything measured.
        used["upstream (the fake model)"] = (cpu_ms(args.upstream_pid) or 0.0) - upstream_cpu
        stop_profiles(spies)
        for u in users:
            await u.close()
        return results, used, sampler, wall, own_cpu, refused

    results, used, sampler, wall, own_cpu, refused = asyncio.run(go())
    stamped = stamps(upstream_base)
    figures = cell_figures(results, stamped, args.tokens)
    n = max(1, figures["streams"])
    cpu: dict[str, float] = {}
    upstream_ms = used.pop("upstream (the fake model)") / n
    for name, ms in used.items():
        cpu[group(name)] = cpu.get(group(name), 0.0) + ms / n
    row = {
        "target": target.label if target else "direct",
        "c": c,
        "delay_ms": delay,
        "wall_s": wall,
        **figures,
        "upstream_cpu_ms_per_stream": round(upstream_ms, 1),
        # The kernel's refused connections over the measured batches (machine-wide: bench/browser/netstat.py).
        "tcp_refused": refused,
    }
    if not target:
        row["cpu_ms_per_stream"] = {"client": round(own_cpu / n, 1)}
        row["cpu_ms_per_stream_total"] = round(own_cpu / n, 1)
    if sampler:
        row["cpu_ms_per_stream"] = {k: round(v, 1) for k, v in cpu.items()}
        row["cpu_ms_per_stream_total"] = round(sum(cpu.values()), 1)
        row["cores_used"] = round(sum(used.values()) / 1000 / wall, 2)
        row["peak_rss_mb"] = {k: round(v) for k, v in sampler.peak_rss.items() if not k.startswith("other")}
        row["pg_peak_backends"] = sampler.pg_peak_backends
    if target:
        row["before_model_split"] = split(results, stamped, read_spans(target.data_dir / "logs"))
    return row


def start_profiles(target: Target | None, c: int, delay: int, args) -> list[subprocess.Popen]:
    """py-spy (raw collapsed stacks, 100 Hz, --nonblocking) on daphne and the worker for one cell."""
    if not target or not args.profile or f"{c}:{delay}" not in args.profile_cells.split(","):
        return []
    spy = str(Path(sys.executable).with_name("py-spy"))
    Path(args.profile).mkdir(parents=True, exist_ok=True)
    procs = []
    for name in ("daphne", "worker"):
        out = Path(args.profile) / f"{target.label}-{name}-c{c}-d{delay}.txt"
        argv = [
            spy,
            "record",
            "-p",
            str(target.pids[name]),
            "-o",
            str(out),
            "-f",
            "raw",
            "-r",
            "100",
            "--nonblocking",
        ]
        if args.profile_gil:
            argv.append("--gil")
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1)  # py-spy attaches
    return procs


def stop_profiles(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.send_signal(2)  # SIGINT: py-spy writes its file and exits
    for proc in procs:
        proc.wait(60)


def batches_for(c: int, args) -> int:
    if args.batches:
        return args.batches
    return 20 if c == 1 else 8 if c <= 20 else 4 if c <= 50 else 3


def idle_rates(targets: list[Target], seconds: float) -> dict[str, dict[str, float]]:
    """% of one core each process used while nothing was sent (--idle-seconds 0: not measured)."""
    if seconds <= 0:
        return {}
    first = {t.label: {n: cpu_ms(p) or 0.0 for n, p in t.pids.items()} for t in targets}
    time.sleep(seconds)
    out = {}
    for t in targets:
        out[t.label] = {
            n: round(((cpu_ms(p) or 0.0) - first[t.label][n]) / (seconds * 1000) * 100, 2)
            for n, p in t.pids.items()
        }
    return out


def fmt(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def print_rows(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'target':>10} {'d':>3} {'C':>4} {'ok':>9} {'TTFT+50':>8} {'TTFT+95':>8} {'pre50':>7} {'pre95':>7} "
        f"{'relay50':>7} {'relay95':>7} {'lag99':>7} {'POST50':>7} {'tok/s':>7} {'CPU/str':>8}  by process; RSS MB"
    )
    print(head)
    for r in rows:
        cpu = r.get("cpu_ms_per_stream") or {}
        rss = r.get("peak_rss_mb") or {}
        print(
            f"{r['target']:>10} {r['delay_ms']:>3} {r['c']:>4} {r['complete']:>4}/{r['streams']:<4} "
            f"{fmt(r['ttft_added_p50'], 1):>8} {fmt(r['ttft_added_p95'], 1):>8} {fmt(r['before_model_p50'], 1):>7} "
            f"{fmt(r['before_model_p95'], 1):>7} {fmt(r['relay_p50'], 1):>7} {fmt(r['relay_p95'], 1):>7} "
            f"{fmt(r['token_lag_p99'], 1):>7} {fmt(r['post_answered_p50'], 1):>7} {fmt(r['agg_tokens_per_s']):>7} "
            f"{fmt(r.get('cpu_ms_per_stream_total'), 1):>8}  "
            + " ".join(f"{k} {v:.0f}" for k, v in sorted(cpu.items()))
            + f" (fake model {fmt(r.get('upstream_cpu_ms_per_stream'), 0)})"
            + ("; " + " ".join(f"{k} {v}" for k, v in sorted(rss.items())) if rss else "")
        )
        if r.get("streams_back_filled"):
            print(f"{'':>12} {r['streams_back_filled']} streams lost live frames and back-filled them")
        if netstat.refused(r.get("tcp_refused") or {}):
            print(f"{'':>12} the kernel refused connections (TcpExt, machine-wide): {r['tcp_refused']}")
        if r["failures"]:
            print(f"{'':>12} failures ({r['failure_count']}): {r['failures'][:2]}")
        if "before_model_split" in r:
            print_split(r["before_model_p50"], r["before_model_split"])


def parse_target(spec: str, args, data_root: Path, upstream: str) -> Target:
    label, _, path = spec.partition("=")
    path, _, workers = path.partition("@")  # label=tree@2: this target with 2 worker processes
    return Target(
        label,
        Path(path or ROOT).resolve(),
        args.mode,
        int(workers or args.workers),
        args.concurrency,
        upstream,
        data_root / label,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--target", action="append", help="label=source tree[@workers] (default: this tree as 'clearloop')"
    )
    parser.add_argument("--cells", default="1,10,20,50,100")
    parser.add_argument("--delays", default="0,10")
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--batches", type=int, default=0, help="measured batches per cell (default by C)")
    parser.add_argument(
        "--mode", choices=("demo", "prod"), default="prod", help="demo: DEBUG=1 as make run; prod: DEBUG=0"
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes (runall --workers)")
    parser.add_argument(
        "--concurrency", type=int, default=None, help="runall --concurrency (default: runall's)"
    )
    parser.add_argument("--no-direct", action="store_true", help="skip the direct-client floor")
    parser.add_argument("--direct-only", action="store_true", help="only the direct client (the machine's floor)")
    parser.add_argument("--idle-seconds", type=float, default=10)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--fresh-db", action="store_true")
    parser.add_argument("--stop-probes", type=int, default=0, help="also measure Stop -> end of run, N times")
    parser.add_argument(
        "--floor", action="store_true", help="also measure the stack's floor for a send (bench/browser/floor.py)"
    )
    parser.add_argument("--out", default="")
    parser.add_argument("--profile", default="", help="directory: py-spy raw stacks of daphne and the worker")
    parser.add_argument("--profile-cells", default="20:10", help="C:delay cells to profile, comma separated")
    parser.add_argument(
        "--profile-gil", action="store_true", help="only samples holding the GIL (py-spy --gil)"
    )
    parser.add_argument(
        "--target-env",
        action="append",
        default=[],
        help="label:NAME=VALUE, an environment variable for one target (e.g. a coalescing window)",
    )
    args = parser.parse_args()
    # SIGTERM (timeout, kill) must stop the stacks too: they run in sessions of their own.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cells = [int(x) for x in args.cells.split(",")]
    delays = [int(x) for x in args.delays.split(",")]
    data_root = Path(tempfile.mkdtemp(prefix="clearloop-bench-browser-"))
    up_port = free_port()
    up_log = open(data_root / "upstream.log", "ab")  # noqa: SIM115
    upstream = subprocess.Popen(
        [sys.executable, "-m", "bench.browser.upstream", "--port", str(up_port)],
        cwd=ROOT,
        stdout=up_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    up_base = f"http://127.0.0.1:{up_port}"
    args.upstream_pid = upstream.pid
    specs = [] if args.direct_only else (args.target or ["clearloop="])
    targets = [parse_target(s, args, data_root, up_base + "/v1") for s in specs]
    for spec in args.target_env:
        label, _, assignment = spec.partition(":")
        name, _, value = assignment.partition("=")
        next(t for t in targets if t.label == label).extra_env[name] = value
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "args": vars(args),
        "load_before": os.getloadavg(),
        "rows": [],
    }
    try:
        wait_for(lambda: port_open("127.0.0.1", up_port), 60, "the fake upstream", upstream)
        for t in targets:
            t.start(max(cells), args.fresh_db)
            print(f"{t.label}: {t.app_dir} on {t.base_url}, processes {t.pids}", flush=True)
        report["idle_pct_of_core"] = idle_rates(targets, args.idle_seconds)
        print("idle % of a core:", report["idle_pct_of_core"], flush=True)
        if args.floor and targets:
            report["send_floor"] = floor.measure(targets[-1], cells, max(args.batches, 8), args.timeout)
            floor.print_rows(report["send_floor"])
        if args.stop_probes:
            report["stop"] = {t.label: stop_probes(t, args) for t in targets}
            print("stop:", report["stop"], flush=True)
        for delay in delays:
            for c in cells:
                if not args.no_direct:
                    report["rows"].append(run_cell(None, up_base, c, delay, args))
                    print_rows(report["rows"][-1:])
                for t in targets:
                    report["rows"].append(run_cell(t, up_base, c, delay, args))
                    print_rows(report["rows"][-1:])
                    sys.stdout.flush()
    finally:
        for t in targets:
            t.stop()
        os.killpg(upstream.pid, 15)
        upstream.wait(10)
    report["load_after"] = os.getloadavg()
    report["saturation_tokens_per_s"] = {
        label: saturation([r for r in report["rows"] if r["target"] == label and r["delay_ms"] == 10])
        for label in {r["target"] for r in report["rows"]}
    }
    print("\n=== all cells ===")
    print_rows(report["rows"])
    print(
        "saturation (agg tokens/s where TTFT+ p50 passes 500 ms, 10 ms/token):",
        report["saturation_tokens_per_s"],
    )
    report["targets_2_3"] = [
        line for label in sorted({t.label for t in targets}) for line in targets_2_and_3(report["rows"], label)
    ]
    print("\n".join(report["targets_2_3"]))
    if report.get("send_floor"):
        floor.print_rows(report["send_floor"])
    print("load average before/after:", report["load_before"], report["load_after"])
    out = Path(args.out) if args.out else RESULTS / f"browser-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
