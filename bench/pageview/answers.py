"""Answers shaped like a real model's, for measuring what opening a conversation costs: prose with a
list, a fenced code block, a table, inline code and links. The bench upstream's answers (`` w0 w1 …``)
are one paragraph of plain words, which markdown renders in microseconds and a real answer does not.
Built from this repository's own files, so the text is fixed and needs no network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent


def _lines(path: str, start: int, count: int) -> str:
    return "\n".join((ROOT / path).read_text(encoding="utf-8").splitlines()[start : start + count])


def _prose(i: int) -> str:
    return (
        f"## Step {i}: what the lease does\n\n"
        "A worker takes a run by setting its **owner** and its *expiry* under a row lock, and renews the "
        "lease while it works. Three things follow:\n\n"
        "1. A redelivered task finds a live lease and does nothing.\n"
        "2. A worker that dies stops renewing; the sweep enqueues the run again.\n"
        "3. The `deliveries` counter fails a run that keeps killing its worker.\n\n"
        "- See [the design notes](https://example.com/durable-runs) for the kill matrix.\n"
        "- The status moves in one place: `move_locked`.\n\n"
        "> Nothing here calls a tool twice.\n\n" + _lines("docs/durable-runs.md", 4 + i % 20, 12)
    )


def _code(i: int) -> str:
    return (
        "Here is the function, with the part that matters:\n\n```python\n"
        + _lines("chatapp/worker/lease.py", 50 + i % 30, 40)
        + "\n```\n\nIt runs inside `transaction.atomic()`, so the row lock is held until commit. "
        "Call it as `take_lease(run_id)`."
    )


def _table(i: int) -> str:
    rows = "\n".join(f"| `{n}` | {n * 3} ms | {'yes' if n % 2 else 'no'} |" for n in range(i % 5, i % 5 + 12))
    return (
        "| setting | measured | kept |\n| --- | ---: | :---: |\n" + rows + "\n\n"
        "The figures above are p50 over 40 runs; **p95** is within 20 % of each.\n\n"
        "```bash\nmake run\ncurl -s http://127.0.0.1:8000/healthz\n```\n"
    )


def _mixed(i: int) -> str:
    return (
        f"Short answer: yes, for case {i}.\n\n"
        "```json\n" + '{"tool": "write_file", "arguments": {"path": "report.md", "content": "# Report"}}'
        "\n```\n\n"
        "Longer answer:\n\n" + _lines("README.md", 10 + i % 30, 15) + "\n\n"
        "```javascript\n" + _lines("static/js/pending.js", 0 + i % 10, 25) + "\n```\n"
    )


KINDS = (_prose, _code, _table, _mixed)


def realistic(i: int) -> str:
    """The ``i``-th answer: the four shapes in turn, each a little different."""
    return KINDS[i % len(KINDS)](i)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool of the demo workspace: " + "what it does, in words. " * 12,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
    for name in ("read_file", "search_files", "write_file", "append_file", "query_database")
]
ROUND_EVENTS = ("round_started", "round_finished")  # each with {"round_index": 0}


def round_of(history: list[dict[str, str]], i: int) -> dict[str, Any]:
    """The ``i``-th run's one round as the worker stores it (a ``Round``'s fields): the request the
    model was sent (the whole history before the answer, the tools offered) and its response.
    ``history``: the conversation's messages up to and including this answer."""
    answer = history[-1]["content"] if history else ""
    return {
        "index": 0,
        "kind": "normal",
        "provider_name": "bench",
        "model": "fake-model",
        "request": {"model": "fake-model", "messages": history[:-1], "tools": TOOLS, "stream": True},
        "response": {"choices": [{"text": answer, "finish_reason": "stop"}], "model": "fake-model"},
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 900 * (i + 1), "completion_tokens": 400},
        "ttft_ms": 420.0,
        "duration_ms": 5200.0,
    }
