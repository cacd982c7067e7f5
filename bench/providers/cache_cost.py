"""Input-token cost of a 6-round tool loop, replayed from recorded usage, with and without prompt caching.

The usage comes from a recording (``tool_loop_usage.json`` beside this file: how it was made is in
its ``provenance``), or from any run's exported trace (``/api/runs/<id>/trace``: its rounds' usage).
Prices are parameters, in currency units per million tokens; the defaults are Anthropic's published
ratios for a $3/M model: cache read 0.1x, 5-minute cache write 1.25x the base input price
(docs/providers.md, "Prompt caching"). The admin's price table is not read: this is a what-if tool.

    .venv/bin/python -m bench.providers.cache_cost [--input-price 3] [--cache-read-price 0.3]
        [--cache-write-price 3.75] [--usage trace.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORDING = Path(__file__).with_name("tool_loop_usage.json")


@dataclass(frozen=True)
class Prices:
    input: float = 3.0
    cache_read: float = 0.30
    cache_write: float = 3.75


def round_cost(usage: dict[str, Any], prices: Prices) -> float:
    """One round's input cost: uncached input, cache reads and cache writes at their own prices.

    ``prompt_tokens`` includes the cached and written parts (clearloop's Usage), so they are taken out
    of the base-price part.
    """
    prompt = usage.get("prompt_tokens") or 0
    read = usage.get("cached_tokens") or 0
    written = usage.get("cache_write_tokens") or 0
    base = max(0, prompt - read - written)
    return (base * prices.input + read * prices.cache_read + written * prices.cache_write) / 1e6


def loop_cost(rounds: list[dict[str, Any]], prices: Prices) -> float:
    return sum(round_cost(u, prices) for u in rounds)


def load(path: Path | None) -> dict[str, list[dict[str, Any]]]:
    """{"cached": [usage, ...], "uncached": [...]}; a single exported trace fills "cached" only."""
    data = json.loads((path or RECORDING).read_text())
    if "rounds" in data and isinstance(data["rounds"], dict):
        return data["rounds"]
    return {"cached": [r.get("usage") or {} for r in data.get("rounds", [])]}


def report(recorded: dict[str, list[dict[str, Any]]], prices: Prices) -> str:
    cached = recorded["cached"]
    # Without caching every prompt token is billed at the base price (same prompts, no markers).
    uncached = recorded.get("uncached") or [
        {"prompt_tokens": u.get("prompt_tokens"), "completion_tokens": u.get("completion_tokens")}
        for u in cached
    ]
    lines = [
        f"input prices per Mtok: base {prices.input:g}, cache read {prices.cache_read:g}, "
        f"cache write {prices.cache_write:g}",
        f"{'round':>5} {'prompt':>8} {'read':>8} {'write':>7} {'cost cached':>12} {'cost uncached':>14}",
    ]
    for n, (with_cache, without) in enumerate(zip(cached, uncached, strict=False), start=1):
        lines.append(
            f"{n:>5} {with_cache.get('prompt_tokens') or 0:>8} {with_cache.get('cached_tokens') or 0:>8} "
            f"{with_cache.get('cache_write_tokens') or 0:>7} {round_cost(with_cache, prices):>12.4f} "
            f"{round_cost(without, prices):>14.4f}"
        )
    total_cached, total_uncached = loop_cost(cached, prices), loop_cost(uncached, prices)
    saved = 1 - total_cached / total_uncached if total_uncached else 0.0
    lines.append(
        f"{len(cached)}-round loop input cost: {total_cached:.4f} with caching, {total_uncached:.4f} without "
        f"({saved:.0%} less)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input-price", type=float, default=Prices.input)
    parser.add_argument("--cache-read-price", type=float, default=None, help="default: 0.1 x input")
    parser.add_argument("--cache-write-price", type=float, default=None, help="default: 1.25 x input")
    parser.add_argument("--usage", type=Path, default=None, help="recorded usage or an exported run trace")
    args = parser.parse_args(argv)
    prices = Prices(
        input=args.input_price,
        cache_read=args.cache_read_price if args.cache_read_price is not None else args.input_price * 0.1,
        cache_write=args.cache_write_price if args.cache_write_price is not None else args.input_price * 1.25,
    )
    print(report(load(args.usage), prices))


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main()
