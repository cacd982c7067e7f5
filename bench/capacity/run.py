"""Benchmark: how many concurrent runs ONE worker process carries (issue 15 target 4). Not a test.

Starts the fake upstream of ``bench/browser`` and each target as ``make run`` ends (``manage.py
runall``: daphne, one Celery worker, an embedded redis-server, its own PostgreSQL database), with
``--concurrency`` = the number of runs (``CLEARLOOP_WORKER_RUNS``; in trees from before the
carrier, the Celery thread count). Then ``--runs`` runs are sent at once, each by its own user
(the per-user in-flight limit), through ``start_run`` as the send view does, in one transaction
so the tasks reach the broker in one burst; every answer is ``--tokens`` tokens at ``--tps``
tokens/s.

Measured per target, from the database and the upstream's send stamps (no browser: at 1,000 runs
the client would be the bottleneck; ``bench/browser`` gives the browser path):

- complete: runs that succeeded with exactly the upstream's text; lost = the rest;
- per-token added latency: time the frame holding a token was stored (and published, the same
  tick) minus the upstream's send time of that token, p50/p99 over every token of every run;
- start delay: the runs' transaction committed (their tasks enqueued) -> the upstream receives a
  run's request, p50/p99 (how long the burst takes to be admitted and reach the model);
- peak concurrent upstream streams (how many runs were in flight at once);
- worker peak RSS and threads, CPU ms per run by process, load average before and after.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/clearloop .venv/bin/python -m bench.capacity.run \
        --runs 200 --tps 20 --tokens 200
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.browser.procs import Sampler  # noqa: E402
from bench.browser.run import ROOT, SEED, Target, group  # noqa: E402
from bench.browser.stats import pct  # noqa: E402
from bench.browser.upstream import expected_text  # noqa: E402
from chatapp.devstack import free_port, port_open, wait_for  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TOKEN = re.compile(r"w(\d+)")
TERMINAL = ("succeeded", "failed", "cancelled")


def send_runs(target: Target, pairs: list[list[Any]], senders: int) -> tuple[list[int], float, float]:
    """``start_run`` for every (conversation, text), in ``senders`` processes; (run ids, seconds, the
    time the last sender committed)."""
    chunks = [pairs[i::senders] for i in range(senders)]
    files, procs = [], []
    started = time.monotonic()
    for i, chunk in enumerate(chunks):
        path = target.data_dir / f"runs-{i}.json"
        path.write_text(json.dumps(chunk))
        files.append(path)
        procs.append(
            subprocess.Popen(
                [target.python, str(SEED), str(target.app_dir), "runs", str(path)],
                cwd=target.app_dir,
                env=target.env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    ids: list[int] = []
    committed = 0.0
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        if proc.returncode:
            raise SystemExit(f"sending runs failed:\n{err[-3000:]}")
        line = next(x for x in out.splitlines() if x.startswith("BENCH-JSON "))
        sent = json.loads(line[len("BENCH-JSON ") :])
        ids += sent["runs"]
        committed = max(committed, sent["committed"])
    return ids, time.monotonic() - started, committed


def wait_terminal(db_url: str, run_ids: list[int], timeout: float) -> float:
    deadline = time.monotonic() + timeout
    started = time.monotonic()
    with psycopg.connect(db_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM chatapp_run WHERE id = ANY(%s) AND status = ANY(%s)",
                (run_ids, list(TERMINAL)),
            ).fetchone()
            if row and row[0] == len(run_ids):
                break
            time.sleep(0.5)
    return time.monotonic() - started


def collect(
    db_url: str, run_ids: list[int]
) -> tuple[dict[int, dict[str, Any]], list[tuple[int, str, float]]]:
    with psycopg.connect(db_url, autocommit=True) as conn:
        runs = {
            r[0]: {"conversation": r[1], "status": r[2], "text": r[3], "created": r[4].timestamp()}
            for r in conn.execute(
                "SELECT id, conversation_id, status, final_text, created_at FROM chatapp_run WHERE id = ANY(%s)",
                (run_ids,),
            )
        }
        deltas = [
            (r[0], (r[1] or {}).get("text", ""), r[2].timestamp())
            for r in conn.execute(
                "SELECT run_id, payload, created_at FROM chatapp_runevent WHERE run_id = ANY(%s) AND type = 'delta'",
                (run_ids,),
            )
        ]
    return runs, deltas


def figures(
    runs: dict[int, dict[str, Any]],
    deltas: list[tuple[int, str, float]],
    rid_of: dict[int, str],
    stamps: dict[str, Any],
    tokens: int,
    committed: float,
) -> dict[str, Any]:
    want = expected_text(tokens)
    complete = [
        rid for rid, r in runs.items() if r["status"] == "succeeded" and r["text"].strip() == want.strip()
    ]
    lags: list[float] = []
    by_second: dict[int, list[float]] = {}  # lags by when their token was sent, from the first send
    first = min((s["sends"][0] for s in stamps.values() if s and s.get("sends")), default=0.0)
    slow: dict[int, int] = {}  # run -> its tokens stored over 1 s after they were sent
    for run_id, text, stored in deltas:
        sends = (stamps.get(rid_of.get(runs[run_id]["conversation"], ""), {}) or {}).get("sends") or []
        for k in TOKEN.findall(text):
            if int(k) < len(sends):
                lags.append((stored - sends[int(k)]) * 1000)
                by_second.setdefault(int(sends[int(k)] - first), []).append(lags[-1])
                if lags[-1] > 1000:
                    slow[run_id] = slow.get(run_id, 0) + 1
    starts = []
    spans = []
    for r in runs.values():
        stamp = stamps.get(rid_of.get(r["conversation"], ""))
        if stamp:
            starts.append((stamp["recv"] - committed) * 1000)
            if stamp["sends"]:
                spans.append((stamp["recv"], stamp["sends"][-1]))
    return {
        "runs": len(runs),
        "complete": len(complete),
        "lost": len(runs) - len(complete),
        "statuses": {
            s: sum(1 for r in runs.values() if r["status"] == s) for s in {r["status"] for r in runs.values()}
        },
        "tokens_measured": len(lags),
        "token_lag_p50_ms": pct(lags, 50),
        "token_lag_p99_ms": pct(lags, 99),
        "token_lag_p999_ms": pct(lags, 99.9),
        "token_lag_max_ms": max(lags) if lags else None,
        # Where the lag is: the burst of starts or the steady stream (second -> [tokens, p50, p99]).
        "token_lag_by_second": {
            t: [len(v), round(pct(v, 50), 1), round(pct(v, 99), 1)] for t, v in sorted(by_second.items())
        },
        "runs_with_tokens_over_1s": len(slow),
        "tokens_over_1s": sum(slow.values()),
        "start_delay_p50_ms": pct(starts, 50),
        "start_delay_p99_ms": pct(starts, 99),
        "peak_concurrent_streams": peak_overlap(spans),
        # How closely the runs' streams line up: the upstream's first request to its last, and its
        # first last-token to its last one. The tighter the second, the more ends share one moment
        # (issue 15 target 4's last second, docs/performance.md session 16).
        "request_spread_ms": spread([a for a, _ in spans]),
        "last_token_spread_ms": spread([b for _, b in spans]),
    }


def spread(times: list[float]) -> float | None:
    return round((max(times) - min(times)) * 1000, 1) if times else None


def peak_overlap(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    now = best = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def start_profile(pid: int, out: Path) -> subprocess.Popen:
    spy = str(Path(sys.executable).with_name("py-spy"))
    # By thread (each stack starts with its thread's name): what matters here is the loop's share of
    # the GIL against the DB and Celery threads' (docs/performance.md, session 17).
    argv = [spy, "record", "-p", str(pid), "-o", str(out), "-f", "raw", "-r", "200", "--nonblocking", "--gil"]
    argv.append("--threads")
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(target: Target, up_base: str, args) -> dict[str, Any]:
    ids = ",".join(str(uid) for uid, _ in target.users[: args.runs])
    conversations = target.seed("conversations", ids)["conversations"]
    rid_of = {cid: uuid.uuid4().hex[:12] for cid in conversations}
    delay = round(1000 / args.tps)
    pairs = [
        [cid, f"Say something. rid={rid_of[cid]} delay={delay} tokens={args.tokens}"] for cid in conversations
    ]
    httpx.get(up_base + "/stamps", timeout=30)  # forget earlier records
    worker = psutil.Process(target.pids["worker"])
    sampler = Sampler(dict(target.pids), target.db_url, target.db_url.rpartition("/")[2]).start()
    spy = (
        start_profile(target.pids["worker"], Path(args.profile) / f"{target.label}-worker-{args.runs}.txt")
        if args.profile
        else None
    )
    load_before = os.getloadavg()
    threads_peak = worker.num_threads()
    run_ids, send_s, committed = send_runs(target, pairs, args.senders)
    # Poll the worker's thread count while the runs go (the old design: one thread per run).
    deadline = time.monotonic() + args.timeout
    waited = 0.0
    while time.monotonic() < deadline:
        threads_peak = max(threads_peak, worker.num_threads())
        waited = wait_terminal(target.db_url, run_ids, 2.0)
        if waited < 2.0:
            break
    used = sampler.stop()
    if spy:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
    load_after = os.getloadavg()
    runs, deltas = collect(target.db_url, run_ids)
    requeued, refused = sweep_counts(target.data_dir / "logs")
    stamps = httpx.get(up_base + "/stamps", timeout=60).json()
    row = figures(runs, deltas, rid_of, stamps, args.tokens, committed)
    cpu: dict[str, float] = {}
    for name, ms in used.items():
        cpu[group(name)] = cpu.get(group(name), 0.0) + ms / max(1, len(run_ids))
    return {
        "target": target.label,
        "runs_sent": len(run_ids),
        "tps": args.tps,
        "tokens": args.tokens,
        "send_seconds": round(send_s, 1),
        **row,
        "worker_peak_rss_mb": round(sampler.peak_rss.get("worker", 0)),
        "daphne_peak_rss_mb": round(sampler.peak_rss.get("daphne", 0)),
        "worker_peak_threads": threads_peak,
        # The sweep's "queued for over N s; enqueuing it again", and deliveries that found their run
        # taken (a duplicate message: a lease refused or held by a live worker).
        "sweep_requeued": requeued,
        "duplicate_deliveries": refused,
        "cpu_ms_per_run": {k: round(v, 1) for k, v in cpu.items()},
        "load_before": load_before,
        "load_after": load_after,
        "at": datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
    }


def sweep_counts(log_dir: Path) -> tuple[int, int]:
    requeued = refused = 0
    for path in sorted(log_dir.glob("worker*.log")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                requeued += "enqueuing it again" in line
                refused += "not started:" in line or "is driven by a live worker" in line
    return requeued, refused


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def print_row(r: dict[str, Any]) -> None:
    print(
        f"{r['target']}: {r['runs']} runs at {r['tps']} tok/s x {r['tokens']}: complete {r['complete']}, "
        f"lost {r['lost']} {r['statuses']}; token lag p50/p99/max {fmt(r['token_lag_p50_ms'])}/"
        f"{fmt(r['token_lag_p99_ms'])}/{fmt(r['token_lag_max_ms'])} ms over {r['tokens_measured']} tokens "
        f"(p99.9 {fmt(r['token_lag_p999_ms'])}; {r['tokens_over_1s']} tokens of {r['runs_with_tokens_over_1s']} runs > 1 s); "
        f"start delay p50/p99 {fmt(r['start_delay_p50_ms'])}/{fmt(r['start_delay_p99_ms'])} ms; "
        f"requests spread over {fmt(r.get('request_spread_ms'))} ms, last tokens over "
        f"{fmt(r.get('last_token_spread_ms'))} ms; "
        f"peak concurrent streams {r['peak_concurrent_streams']}; worker RSS {r['worker_peak_rss_mb']} MB, "
        f"threads {r['worker_peak_threads']}; CPU ms/run {r['cpu_ms_per_run']}; sent in {r['send_seconds']} s; "
        f"sweep re-enqueued {r.get('sweep_requeued', '-')}, duplicate deliveries {r.get('duplicate_deliveries', '-')}; "
        f"load {r['load_before'][0]:.1f} -> {r['load_after'][0]:.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", help="label=source tree (default: this tree)")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--tps", type=float, default=20.0, help="tokens per second of each answer")
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--senders", type=int, default=1, help="processes sending the runs")
    parser.add_argument("--threads", type=int, default=0, help="runall --threads (trees with the carrier)")
    parser.add_argument(
        "--capacity", type=int, default=0, help="CLEARLOOP_WORKER_RUNS (default: --runs; lower makes a backlog)"
    )
    parser.add_argument(
        "--grace", type=int, default=900, help="CLEARLOOP_RUN_QUEUED_GRACE_SECONDS (20 is the default of the app)"
    )
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--profile", default="", help="directory: py-spy (--gil) of the worker")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    data_root = Path(tempfile.mkdtemp(prefix="clearloop-bench-capacity-"))
    up_port = free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "bench.browser.upstream", "--port", str(up_port)],
        cwd=ROOT,
        stdout=open(data_root / "upstream.log", "ab"),  # noqa: SIM115 - owned by the child
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    up_base = f"http://127.0.0.1:{up_port}"
    rows = []
    try:
        wait_for(lambda: port_open("127.0.0.1", up_port), 60, "the fake upstream", upstream)
        for spec in args.target or ["clearloop="]:
            label, _, path = spec.partition("=")
            capacity = args.capacity or args.runs
            target = Target(
                label, Path(path or ROOT).resolve(), "prod", 1, capacity, up_base + "/v1", data_root / label
            )
            # The burst's runs are created in one transaction that takes a minute at 1,000 runs on the
            # loaded machine: at its commit they are all "queued for over 20 s", and the sweep's rule
            # for lost queued runs would enqueue every one of them again (harmless, but measured).
            # (--grace 20 measures what the sweep does with a backlog: see "requeued" in the row).
            target.extra_env = {"CLEARLOOP_RUN_QUEUED_GRACE_SECONDS": str(args.grace)}
            if args.threads:
                target.extra_argv = ["--threads", str(args.threads)]
            try:
                target.start(args.runs, fresh_db=True)
                print(f"{label}: {target.app_dir}, processes {target.pids}", flush=True)
                rows.append(measure(target, up_base, args))
                print_row(rows[-1])
            finally:
                target.stop()
    finally:
        os.killpg(upstream.pid, 15)
        upstream.wait(10)
    out = (
        Path(args.out)
        if args.out
        else RESULTS / f"capacity-{args.runs}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
