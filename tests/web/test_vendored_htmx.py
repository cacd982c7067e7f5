"""The templates load exactly the vendored htmx build, and its version is the one they expect."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_vendored_htmx_matches_the_template_reference():
    base = (ROOT / "templates" / "base.html").read_text()
    referenced = re.search(r"vendor/(htmx-([\d.]+)\.min\.js)", base)
    assert referenced, "base.html must load the vendored htmx"
    path = ROOT / "static" / "vendor" / referenced[1]
    assert path.exists()
    source = path.read_text()
    assert f'version:"{referenced[2]}"' in source.replace(" ", "")
