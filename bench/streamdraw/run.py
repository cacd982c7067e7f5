"""What drawing a streaming answer costs the browser: plain text against the markdown draft. Not a test.

A streaming answer reaches the page as frames of text. Before session 27 each frame's text was appended
to the stream box as plain text; now a draft beside it shows that text as markdown
(``static/js/stream_markdown.js``), drawn at most once per animation frame, re-parsing only the blocks
not yet complete. This streams real-shaped answers (``bench.pageview.answers``: prose, lists, code, tables)
into a page holding the app's own CSS and scripts, in Chromium, frame by frame, and prints the renderer
main thread's time (DevTools ``Performance.getMetrics``: task, script, layout and style) per frame and in
all, for each way of drawing, interleaved. No server: the page's files are served from this tree.

    .venv/bin/python -m bench.streamdraw.run [--sizes 3000,40000] [--chunk 40] [--gap-ms 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

from bench.pageview.answers import realistic

ROOT = Path(__file__).resolve().parent.parent.parent
ORIGIN = "http://streamdraw.invalid"
METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<link rel="stylesheet" href="/static/css/app.css"></head>
<body><main id="messages" class="messages" style="max-width:900px">
<article class="msg assistant" id="run-1" data-run="1"><div class="body streaming" data-role="stream"></div></article>
</main>
<script>window.gettext = function (s) {{ return s; }}; window.interpolate = function (s) {{ return s; }};</script>
<script src="/static/js/rich.js"></script>{script}</body></html>"""
DRAFT = (
    '<script src="/static/js/stream_markdown.js" data-markdown-it="/static/vendor/markdown-it-15.0.3.min.js"'
    ' data-purify="/static/vendor/purify-3.5.0.min.js"></script>'
)
# The plain way: what chat.js did alone (appendText), with nothing drawing beside it.
PLAIN = "<script>window.clearloopStream = { changed: function () {}, ensure: function () { return Promise.resolve(); } };</script>"

# Frames as chat.js applies them: the text appended to the stream box, then the draft told; a gap between
# frames, as the worker's coalescing window spaces them; at the end, two animation frames for the last draw.
STREAM = """
async ([pieces, gap]) => {
  const el = document.querySelector('[data-role=stream]');
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  for (const piece of pieces) {
    const last = el.lastChild;
    if (last && last.nodeType === Node.TEXT_NODE) last.appendData(piece); else el.appendChild(document.createTextNode(piece));
    window.clearloopStream.changed(el);
    document.body.offsetHeight;  // the page lays out after each frame, as it paints
    await sleep(gap);
  }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const draft = document.querySelector('[data-role=draft]');
  return {blocks: draft ? draft.children.length : 0, chars: el.textContent.length};
}
"""


def answer_of(size: int) -> str:
    parts, i = [], 0
    while sum(len(p) for p in parts) < size:
        parts.append(realistic(i))
        i += 1
    return "\n\n".join(parts)[:size]


async def serve(route: Any) -> None:
    path = route.request.url.removeprefix(ORIGIN)
    if path.startswith("/page/"):
        body = PAGE.format(script=DRAFT if path == "/page/draft" else PLAIN)
        await route.fulfill(body=body, content_type="text/html")
        return
    file = (ROOT / path.lstrip("/")).resolve()
    if not file.is_relative_to(ROOT / "static") or not file.is_file():
        await route.fulfill(status=404)
        return
    kind = "text/css" if file.suffix == ".css" else "application/javascript"
    await route.fulfill(body=file.read_bytes(), content_type=kind)


async def one(browser: Any, way: str, text: str, chunk: int, gap: float) -> dict[str, Any]:
    page = await browser.new_page(viewport={"width": 1440, "height": 900})
    await page.route(f"{ORIGIN}/**", serve)
    await page.goto(f"{ORIGIN}/page/{way}")
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("Performance.enable")
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    await page.evaluate("() => window.clearloopStream.ensure()")  # the libraries loaded, as at idle
    before = await metrics(cdp)
    shown = await page.evaluate(STREAM, [pieces, gap])
    after = await metrics(cdp)
    await page.close()
    used = {k: (after[k] - before[k]) * 1000 for k in METRICS}
    return {"way": way, "frames": len(pieces), **shown, "ms": used}


async def metrics(cdp: Any) -> dict[str, float]:
    return {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}


async def main(args: argparse.Namespace) -> list[dict[str, Any]]:
    from playwright.async_api import async_playwright

    rows = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for size in args.sizes:
            text = answer_of(size)
            for _ in range(args.repeat):
                for way in ("plain", "draft"):  # interleaved: the machine's drift falls on both
                    row = await one(browser, way, text, args.chunk, args.gap_ms)
                    rows.append({"size": size, **row})
        await browser.close()
    return rows


def report(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'answer':>8} {'way':>6} {'frames':>6} {'main thread ms (p50 of runs)':>30} {'per frame':>10}  script/layout/style"
    )
    for size in sorted({r["size"] for r in rows}):
        for way in ("plain", "draft"):
            runs = [r for r in rows if r["size"] == size and r["way"] == way]
            task = statistics.median(r["ms"]["TaskDuration"] for r in runs)
            parts = "/".join(
                f"{statistics.median(r['ms'][k] for r in runs):.0f}"
                for k in ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
            )
            frames = runs[0]["frames"]
            print(f"{size:>8} {way:>6} {frames:>6} {task:>30.0f} {task / frames:>10.2f}  {parts}")


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[3000, 40000])
    parser.add_argument("--chunk", type=int, default=40, help="characters per frame (about 10 tokens)")
    parser.add_argument("--gap-ms", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = asyncio.run(main(args))
    report(rows)
    if args.out:
        args.out.write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    cli()
