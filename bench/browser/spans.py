"""The split of "before the model call" into its parts, from the workers' start-span log. Not a test.

Each worker logs one ``start spans {...}`` record per run delivery (``chatapp/worker/start_spans.py``):
wall-clock marks from the send's commit in daphne to the first request leaving the worker. Joined
with the client's POST time and the upstream's receive time, they give, per run, the time spent in
each stage; printed as the p50 of each gap. A target without the span log (an older tree) prints
nothing here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.browser.stats import pct

# The marks in order (chatapp/worker/start_spans.py ORDER), between the POST and the upstream.
MARKS = (
    "committed",
    "received",
    "admitted",
    "leased",
    "driving",
    "context",
    "toolbox",
    "agent",
    "prepared",
    "request",
)
PREFIX = "start spans "
BEFORE_MODEL_TARGET_MS = 8.0  # issue 15, target 1: POST -> upstream receives the request, p50


def read_spans(log_dir: Path) -> dict[int, dict[str, float]]:
    """Run id -> its first delivery's marks, from every worker log in ``log_dir``."""
    out: dict[int, dict[str, float]] = {}
    for path in sorted(log_dir.glob("worker*.log")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                at = line.find(PREFIX)
                if at < 0:
                    continue
                try:
                    marks = json.loads(line[at + len(PREFIX) :])
                except ValueError:
                    continue
                out.setdefault(int(marks.pop("run")), marks)
    return out


def split(
    batches: list[list[dict[str, Any]]], stamps: dict[str, Any], spans: dict[int, dict[str, float]]
) -> dict[str, Any]:
    """p50 ms of each stage between the POST and the upstream's receipt, over the cell's streams."""
    gaps: dict[str, list[float]] = {}
    runs = 0
    for batch in batches:
        for s in batch:
            marks, up = spans.get(s.get("run_id") or 0), stamps.get(s["rid"])
            if not marks or not up:
                continue
            runs += 1
            points = [("post", s["t_post"])] + [(m, marks[m]) for m in MARKS if m in marks]
            points.append(("upstream", up["recv"]))
            for (_, a), (name, b) in zip(points, points[1:], strict=False):
                gaps.setdefault(name, []).append((b - a) * 1000)
    order = [*MARKS, "upstream"]
    return {
        "runs": runs,
        "p50_ms": {name: pct(gaps[name], 50) for name in order if name in gaps},
    }


def verdict(before_model_p50: float | None) -> str:
    if before_model_p50 is None:
        return "-"
    return "met" if before_model_p50 <= BEFORE_MODEL_TARGET_MS else "not met"


def print_split(before_model_p50: float | None, parts: dict[str, Any]) -> None:
    head = (
        f"{'':>12} before the model p50 {before_model_p50 or 0:.1f} ms "
        f"(target 1: <= {BEFORE_MODEL_TARGET_MS:.0f} ms: {verdict(before_model_p50)})"
    )
    if not parts.get("runs"):
        print(head + "; no start spans in the worker log")
        return
    split_text = ", ".join(f"{name} {ms:.1f}" for name, ms in parts["p50_ms"].items() if ms is not None)
    print(f"{head}; split p50 ms over {parts['runs']} runs (gap before each mark): {split_text}")
