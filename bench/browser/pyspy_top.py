"""Summarise py-spy raw (collapsed) stacks: inclusive share of samples per function. Not a test.

python -m bench.browser.pyspy_top FILE [--top 40] [--match chatapp]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

_FRAME = re.compile(r"^(?P<func>[^ ]+) \((?P<file>[^:)]+)(?::\d+)?\)$")


def frames(stack: str) -> list[str]:
    out = []
    for frame in stack.split(";"):
        m = _FRAME.match(frame.strip())
        if not m:
            out.append(frame.strip())
            continue
        path = m["file"]
        for marker in ("site-packages/", "/chatapp/", "/agent/", "/lib/python3"):
            if marker in path:
                path = (
                    path.split(marker, 1)[1]
                    if marker.endswith("/")
                    else marker.strip("/") + "/" + path.split(marker, 1)[1]
                )
                break
        out.append(f"{m['func']} ({path})")
    return out


def summarise(path: str) -> tuple[int, Counter, Counter]:
    inclusive: Counter = Counter()
    own: Counter = Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue  # a frame name holding a newline (py-spy reads some strings raw) splits a line
            n = int(count)
            total += n
            seen = set()
            parts = frames(stack)
            for frame in parts:
                if frame not in seen:
                    inclusive[frame] += n
                    seen.add(frame)
            if parts:
                own[parts[-1]] += n
    return total, inclusive, own


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--match", default="")
    args = parser.parse_args()
    total, inclusive, own = summarise(args.file)
    print(f"{args.file}: {total} samples")
    print("inclusive:")
    for frame, n in inclusive.most_common():
        if args.match and args.match not in frame:
            continue
        print(f"  {100 * n / total:5.1f} %  {frame}")
        args.top -= 1
        if args.top <= 0:
            break
    print("self (top 15):")
    for frame, n in own.most_common(15):
        print(f"  {100 * n / total:5.1f} %  {frame}")


if __name__ == "__main__":
    main()
