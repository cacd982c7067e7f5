"""`python -m bench targets` on the stored results of record (bench/results/current.json).

Issue 15 is done when the benchmark prints every target with its figure, each met or explained with a
measured reason: a clean checkout must print exactly that, whatever times the clone gave the files.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "bench" / "results"


def report(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.targets.run", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def target_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line[:2].rstrip(".").isdigit()]


def test_every_file_of_record_exists():
    files = json.loads((RESULTS / "current.json").read_text())["files"]
    named = [v for v in files.values() if isinstance(v, str)] + files.get("failures", [])
    assert named and all((RESULTS / name).is_file() for name in named), named


def test_every_target_has_a_figure_and_every_unmet_one_a_reason():
    lines = target_lines(report())
    assert {line.split(".", 1)[0] for line in lines} == {str(n) for n in range(1, 9)}
    assert not [line for line in lines if "not measured" in line]
    unmet = [line for line in lines if "NOT met" in line]
    assert all("reason: docs/performance.md)" not in line for line in unmet), unmet  # a reason, not a pointer


def test_the_files_of_record_do_not_depend_on_file_times():
    # A clone gives every file the same time: making every other result the newest must not change it.
    before = report()
    files = json.loads((RESULTS / "current.json").read_text())["files"]
    of_record = {v for v in files.values() if isinstance(v, str)} | set(files.get("failures", []))
    others = [p for p in RESULTS.glob("*.json") if p.name not in of_record and p.name != "current.json"]
    saved = {p: p.stat() for p in others}
    try:
        for p in others:
            os.utime(p)
        assert report() == before
    finally:
        for p, st in saved.items():
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_file_named_on_the_command_line_wins(tmp_path):
    doc = {
        "args": {},
        "rows": [
            {"target": "x", "runs": 200, "lost": 3, "token_lag_p99_ms": 50.0, "worker_peak_rss_mb": 100}
        ],
    }
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps(doc))
    lines = report("--capacity", str(path))
    lost = next(line for line in lines if line.startswith("4. 200 runs: tokens lost"))
    assert " 3 " in lost and "NOT met" in lost
    lag = next(line for line in lines if line.startswith("4. 200 runs x 20 tok/s: p99 token lag"))
    assert "50.0 ms" in lag and lag.rstrip().endswith("met")


def test_the_page_from_the_click_is_printed_beside_the_targets():
    lines = report()
    at = lines.index(next(line for line in lines if line.startswith("from the click, in Chromium")))
    page = lines[at + 1 :]
    assert target_lines(page) == []  # not counted as targets
    assert any(
        "0 other users streaming" in line and "a first message from the home page" in line for line in page
    )
    assert any(line.startswith("  page, opening 40 exchanges: first byte") for line in page)
    assert any(
        line.startswith("  page, opening 40 exchanges of answers shaped like a real model's: first byte")
        for line in page
    )
