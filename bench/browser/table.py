"""Markdown tables from a bench/browser JSON result (for docs/performance.md). Not a test.

python -m bench.browser.table bench/results/browser-....json
"""

from __future__ import annotations

import json
import sys


def fmt(v, digits=0):
    return "–" if v is None else f"{v:,.{digits}f}"


def main(path: str) -> None:
    report = json.load(open(path))
    print(
        f"started {report['started']}, load average before {report['load_before'][0]:.1f}, "
        f"after {report['load_after'][0]:.1f}, mode {report['args']['mode']}\n"
    )
    print(
        "| target | delay | C | complete | TTFT+ p50 / p95 | before model p50 | relay p50 | token lag p99 | "
        "POST p50 | agg tok/s | CPU ms/stream (daphne, worker, PG, redis) | peak RSS MB daphne / worker |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in report["rows"]:
        cpu = r.get("cpu_ms_per_stream") or {}
        rss = r.get("peak_rss_mb") or {}
        workers = "+".join(str(v) for k, v in sorted(rss.items()) if k.startswith("worker"))
        cpu_cell = (
            f"{fmt(r.get('cpu_ms_per_stream_total'))} ({fmt(cpu.get('daphne'))}, {fmt(cpu.get('worker'))}, "
            f"{fmt(cpu.get('postgres'))}, {fmt(cpu.get('redis'))})"
            if cpu
            else "–"
        )
        print(
            f"| {r['target']} | {r['delay_ms']} | {r['c']} | {r['complete']}/{r['streams']} | "
            f"{fmt(r['ttft_added_p50'], 1)} / {fmt(r['ttft_added_p95'], 1)} | {fmt(r['before_model_p50'], 1)} | "
            f"{fmt(r['relay_p50'], 1)} | {fmt(r['token_lag_p99'])} | {fmt(r['post_answered_p50'])} | "
            f"{fmt(r['agg_tokens_per_s'])} | {cpu_cell} | {rss.get('daphne', '–')} / {workers or '–'} |"
        )
    print()
    print(
        "saturation (tok/s where TTFT+ p50 passes 500 ms at 10 ms/token):",
        report.get("saturation_tokens_per_s"),
    )
    print("idle % of a core:", report.get("idle_pct_of_core"))
    if report.get("stop"):
        print("stop:", report["stop"])


if __name__ == "__main__":
    main(sys.argv[1])
