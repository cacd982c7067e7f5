"""Every target of issue 15 with the figure measured for it, met or not.

The benches write JSON (`bench/results/`); this reads the ones named (by default the newest of each
kind) and prints one line per target: the figure, the bound, and "met" or "NOT met" with where
docs/performance.md gives the measured reason. It measures nothing itself, so it can be rerun on
stored results.

    .venv/bin/python -m bench targets            # the newest results of each kind
    .venv/bin/python -m bench.targets.run [--browser F] [--stop-idle F] [--capacity F] [--capacity-1000 F] [--runs F] [--scale F]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent.parent / "results"
WHY = "docs/performance.md"


@dataclass(frozen=True)
class Line:
    target: str
    figure: str
    bound: str
    met: bool | None  # None: nothing measured for it in the files given

    def text(self) -> str:
        verdict = {True: "met", False: f"NOT met (reason: {WHY})", None: "not measured"}[self.met]
        return f"{self.target:<50} {self.figure:<40} {self.bound:<12} {verdict}"


def newest(pattern: str) -> Path | None:
    found = sorted(RESULTS.glob(pattern), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def load(path: Path | None) -> dict[str, Any]:
    return json.loads(path.read_text()) if path else {}


def ours(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The app's rows (not the direct client's floor); with several targets, the last one named."""
    rows = [r for r in doc.get("rows", []) if r.get("target") != "direct"]
    labels = [r["target"] for r in rows]
    return [r for r in rows if r["target"] == labels[-1]] if labels else []


def cell(rows: list[dict[str, Any]], c: int, delay: int) -> dict[str, Any] | None:
    return next((r for r in rows if r.get("c") == c and r.get("delay_ms") == delay), None)


def ttft_lines(rows: list[dict[str, Any]]) -> Iterator[Line]:
    for c, bound in ((1, 10.0), (20, 50.0), (100, 150.0)):
        for delay in (0, 10):
            row = cell(rows, c, delay)
            value = row.get("ttft_added_p50") if row else None
            yield Line(f"1. added TTFT p50, C={c}, {delay} ms/token", fmt(value, "ms"), f"<= {bound:g} ms",
                       None if value is None else value <= bound)
    for delay in (0, 10):
        row = cell(rows, 1, delay)
        value = row.get("before_model_p50") if row else None
        yield Line(f"1. before the model call p50, C=1, {delay} ms/token", fmt(value, "ms"), "<= 8 ms",
                   None if value is None else value <= 8)


def cpu_lines(rows: list[dict[str, Any]]) -> Iterator[Line]:
    for delay in (0, 10):
        measured = [r for r in rows if r.get("delay_ms") == delay and r.get("cpu_ms_per_stream_total")]
        if not measured:
            yield Line(f"2. CPU per 200-token stream, {delay} ms/token", "-", "<= 20 ms", None)
            continue
        worst = max(measured, key=lambda r: r["cpu_ms_per_stream_total"])
        parts = worst.get("cpu_ms_per_stream", {})
        split = "/".join(f"{parts.get(k, 0):g}" for k in ("daphne", "worker", "postgres", "redis"))
        yield Line(f"2. CPU per stream, {delay} ms/token (worst C={worst['c']})",
                   f"{worst['cpu_ms_per_stream_total']:g} ms (d/w/pg/r {split})", "<= 20 ms",
                   worst["cpu_ms_per_stream_total"] <= 20)


def throughput_line(doc: dict[str, Any], rows: list[dict[str, Any]]) -> Line:
    saturation = (doc.get("saturation_tokens_per_s") or {}).get(rows[0]["target"]) if rows else None
    peak = max((r.get("agg_tokens_per_s", 0) for r in rows if r.get("delay_ms") == 10), default=None)
    if saturation is None and peak is not None:
        figure = f"> {peak:,.0f} tok/s (never passed 500 ms)"
        return Line("3. tokens/s before TTFT p50 > 500 ms", figure, ">= 10,000", peak >= 10_000)
    return Line("3. tokens/s before TTFT p50 > 500 ms", fmt(saturation, "tok/s"), ">= 10,000",
                None if saturation is None else saturation >= 10_000)


def capacity_lines(two_hundred: dict[str, Any], thousand: dict[str, Any]) -> Iterator[Line]:
    row = (two_hundred.get("rows") or [None])[-1]
    if row:
        yield Line("4. 200 runs x 20 tok/s: p99 token lag", fmt(row.get("token_lag_p99_ms"), "ms"), "<= 100 ms",
                   row["token_lag_p99_ms"] <= 100)
        yield Line("4. 200 runs: tokens lost", str(row.get("lost")), "0", row.get("lost") == 0)
        yield Line("4. 200 runs: worker peak RSS", fmt(row.get("worker_peak_rss_mb"), "MB"), "<= 400 MB",
                   row.get("worker_peak_rss_mb", 1e9) <= 400)
    else:
        yield Line("4. 200 runs x 20 tok/s", "-", "", None)
    row = (thousand.get("rows") or [None])[-1]
    if row:
        done = f"{row.get('complete')}/{row.get('runs')} complete, {row.get('lost')} lost"
        yield Line("4. 1,000 runs on one worker", done, "all, 0 lost",
                   row.get("complete") == row.get("runs") and row.get("lost") == 0)
    else:
        yield Line("4. 1,000 runs on one worker", "-", "", None)


def overhead_line(runs: dict[str, Any]) -> Line:
    value = (runs.get("overhead") or {}).get("overhead_per_round_p50_ms")
    return Line("5. host overhead per round p50", fmt(value, "ms"), "<= 15 ms", None if value is None else value <= 15)


def failure_lines(rows: list[dict[str, Any]]) -> Iterator[Line]:
    for c in (100, 200):
        measured = [r for r in rows if r.get("c") == c]
        failed = sum(r.get("failure_count", 0) for r in measured)
        yield Line(f"6. failed requests at C={c}", str(failed) if measured else "-", "0",
                   None if not measured else failed == 0)


def scale_line(doc: dict[str, Any]) -> Line:
    rows = [r for r in doc.get("rows", []) if r.get("target") in ("w1", "w2") and r.get("delay_ms") == 10]
    top = max((r["c"] for r in rows), default=None)
    pair = {r["target"]: r.get("agg_tokens_per_s") for r in rows if r["c"] == top}
    if not pair.get("w1") or not pair.get("w2"):
        return Line("7. scale-out, 2 workers / 1 worker", "-", "reported", None)
    return Line(f"7. scale-out, 2 workers / 1 worker (C={top})", f"{pair['w2'] / pair['w1']:.2f}x", "reported", True)


def of_label(table: dict[str, Any] | None, label: str | None) -> Any:
    """The entry of ``label`` (the app's row label), else the last one."""
    table = table or {}
    return table.get(label) if label in table else next(reversed(table.values()), None)


def idle_stop_lines(doc: dict[str, Any], label: str | None) -> Iterator[Line]:
    idle = of_label(doc.get("idle_pct_of_core"), label)
    if idle:
        worst = max(idle.get("worker", 0), idle.get("daphne", 0))
        yield Line("8. idle worker / daphne, % of a core", f"{idle.get('worker')} / {idle.get('daphne')} %", "< 1 %",
                   worst < 1)
    else:
        yield Line("8. idle cost", "-", "< 1 %", None)
    stop = of_label(doc.get("stop"), label)
    value = stop.get("stop_to_end_p50_ms") if stop else None
    yield Line("8. Stop -> end of run p50", fmt(value, "ms"), "<= 100 ms", None if value is None else value <= 100)


def fmt(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:,.1f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", type=Path, default=newest("browser-*.json"))
    parser.add_argument("--stop-idle", type=Path, default=None, help="browser JSON with --stop-probes/--idle")
    parser.add_argument("--capacity", type=Path, default=newest("capacity-200-*.json"))
    parser.add_argument("--capacity-1000", type=Path, default=newest("capacity-1000-*.json"))
    parser.add_argument("--runs", type=Path, default=newest("runs*.json"))
    parser.add_argument("--scale", type=Path, default=None, help="browser JSON with targets w1 and w2")
    args = parser.parse_args()
    browser = load(args.browser)
    rows = ours(browser)
    print("files:", ", ".join(str(p) for p in (args.browser, args.stop_idle, args.capacity, args.capacity_1000,
                                               args.runs, args.scale) if p))
    lines = [*ttft_lines(rows), *cpu_lines(rows), throughput_line(browser, rows),
             *capacity_lines(load(args.capacity), load(args.capacity_1000)), overhead_line(load(args.runs)),
             *failure_lines(rows), scale_line(load(args.scale)),
             *idle_stop_lines(load(args.stop_idle) if args.stop_idle else browser, rows[0]["target"] if rows else None)]
    for line in lines:
        print(line.text())


if __name__ == "__main__":
    main()
