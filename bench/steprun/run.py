"""Target 5's run in process: the worker's CPU and statements per 000 §6 run. Not a test.

The end-to-end bench (``bench.runs``: daphne, a worker, the stamped model, a websocket client) measures
what the issue asks, but on a machine whose speed moves between runs its figures spread by ±20 %
(docs/performance.md, session 15). This one drives the same scenario (round 1: ``read_file`` and
``search_files`` in parallel, round 2: ``write_file``, round 3: the answer) through the worker's real
recorder, store and audit chain, with a scripted model and in-process tools (``tests/worker/scenario.py``,
the harness of the storage tests), on a PostgreSQL database of its own, production settings: only the
worker's own code and its statements are measured, so a change shows above the noise with fewer runs.
Prints the statements of one run (``--sql``) and the CPU per run (p50 over ``--runs``); ``--profile
FILE`` writes a cProfile of the measured runs.

    .venv/bin/python -m bench.steprun.run [--runs 100] [--sql] [--profile /tmp/step.prof]
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
FILES = "读取 config.yaml，同时列出当前目录中的 Markdown 文件，然后把分析结果写入 report.md。"


def toolbox() -> Any:
    from tests.loop.loop_doubles import FuncToolbox, info

    async def done(arguments: dict[str, Any]) -> Any:
        return {"ok": True, **arguments}

    return FuncToolbox(
        {
            "read_file": (info("read_file", {"path": {"type": "string"}}, risk="read_only"), done),
            "search_files": (info("search_files", {"glob": {"type": "string"}}, risk="read_only"), done),
            "write_file": (info("write_file", {"path": {"type": "string"}}, risk="write"), done),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--db", default="clearloop_steprun")
    parser.add_argument("--sql", action="store_true", help="print the statements of one run")
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.cpu_per_call import measure
    from bench.sendview.run import migrated_owner

    owner = migrated_owner(args.db, "steprun")
    from django.db.backends.utils import CursorWrapper

    from agent.loop import LoopSettings
    from tests.loop.loop_doubles import ScriptedProvider
    from tests.worker.scenario import drive, new_run
    from tests.worker.test_step_transactions import answers

    main_thread = threading.get_ident()
    statements: list[str] = []
    execute = CursorWrapper._execute

    def counting(self: CursorWrapper, sql: str, *rest: Any) -> Any:
        if threading.get_ident() != main_thread:
            statements.append(sql)
        return execute(self, sql, *rest)

    CursorWrapper._execute = counting  # type: ignore[method-assign]  # a bench's own process

    def one(i: int) -> None:
        run = new_run(owner, f"{FILES} #{i}")
        step = drive(run, ScriptedProvider(answers), toolbox(), LoopSettings())
        assert type(step).__name__ == "NextStepFinalOutput", step

    for i in range(5):  # warm-up: imports, the pool, the first rows
        one(i)
    statements.clear()
    one(5)
    print(f"statements of one run on the worker's DB thread: {len(statements)}")
    for sql in statements if args.sql else []:
        print("   ", sql[:160])
    p50, mean, wall = measure(lambda i: one(100 + i), args.runs, args.profile)
    print(
        f"CPU per 000 §6 run over {args.runs} runs (this process: the engine, the recorder, the DB "
        f"thread): p50 {p50:.2f} ms, mean {mean:.2f} ms; wall p50 {wall:.2f} ms"
    )


if __name__ == "__main__":
    main()
