"""Run every benchmark: providers, MCP (if present), the send view, opening a
conversation in process, target 5's run in process,
runs, browser, the page in Chromium, drawing a streaming answer in Chromium. Figures are printed; runs and browser also write JSON.

.venv/bin/python -m bench [providers mcp sendview pageview steprun httpclient runs browser page streamdraw capacity targets]
"""

from __future__ import annotations

import importlib.util
import runpy
import sys

ALL = (
    "providers",
    "mcp",
    "sendview",
    "pageview",
    "steprun",
    "httpclient",
    "runs",
    "browser",
    "page",
    "streamdraw",
    "capacity",
    "targets",
)


def run_one(name: str) -> None:
    module = f"bench.{name}.run"
    if importlib.util.find_spec(f"bench.{name}") is None or importlib.util.find_spec(module) is None:
        print(f"{module}: not present, skipped")
        return
    print(f"\n=== {module} ===", flush=True)
    saved = sys.argv
    sys.argv = [module]  # each bench runs with its own command-line defaults
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved


def main(names: list[str]) -> None:
    unknown = [name for name in names if name not in ALL]
    if unknown:
        # Options belong to one bench's own command (python -m bench.page.run --start 20 ...):
        # run here, they were taken for bench names, one after another.
        sys.exit(
            f"unknown bench {', '.join(unknown)}: choose from {' '.join(ALL)};"
            " a bench's options go to its own module: python -m bench.<name>.run --help"
        )
    for name in names or ALL:
        run_one(name)


if __name__ == "__main__":
    main(sys.argv[1:])
