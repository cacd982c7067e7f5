"""agent/ is the engine: it must import nothing from Django, Channels, Celery, chatapp or demo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import importlib, pkgutil, sys
import agent
for module in pkgutil.walk_packages(agent.__path__, "agent."):
    importlib.import_module(module.name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in {"django", "channels", "celery", "chatapp", "daphne", "demo"})
print("\\n".join(bad))
sys.exit(1 if bad else 0)
"""


def test_importing_every_agent_module_loads_no_django():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, f"agent imported: {result.stdout} {result.stderr[-2000:]}"


def test_no_agent_source_file_imports_the_host():
    offenders = []
    for path in (ROOT / "agent").rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")) and stripped.split()[1].split(".")[0] in {
                "django",
                "channels",
                "celery",
                "chatapp",
                "demo",
            }:
                offenders.append(f"{path}: {stripped}")
    assert offenders == []
