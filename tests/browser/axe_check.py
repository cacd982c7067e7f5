"""axe-core in the browser tests: installed from npm into tests/browser/axe (pinned by its lock file,
like the OIDC provider and the conformance suite), injected from that file, never fetched at run time.

``serious(page)`` runs axe on the page as it is and returns the serious and critical violations, each
with the first few elements it found (what a failing assert should show)."""

from __future__ import annotations

from pathlib import Path

from tests.npm_ci import npm_ci

AXE_DIR = Path(__file__).resolve().parent / "axe"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"

# WCAG 2.x A and AA rules (colour contrast included) and axe's best practices.
RUN = """async () => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map((n) => ({target: n.target.join(" "), summary: n.failureSummary})),
  }));
}"""


def ensure_installed() -> None:
    stamp = AXE_DIR / "node_modules" / ".package-lock.json"
    lock = AXE_DIR / "package-lock.json"
    npm_ci(AXE_DIR, lambda: AXE_JS.exists() and stamp.exists() and lock.stat().st_mtime <= stamp.stat().st_mtime)


def serious(page) -> list[dict]:
    ensure_installed()
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    return [v for v in page.evaluate(RUN) if v["impact"] in ("serious", "critical")]
