import hashlib
import os
from pathlib import Path

import pytest

from agent.toolbox import ToolContext
from agent.tools import WorkspaceLimits, WorkspaceToolbox

ADMIN_DSN = os.environ.get("CLEARLOOP_TEST_PG_ADMIN", "host=127.0.0.1 user=postgres dbname=postgres")


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under root (links not followed) with a content hash or link target."""
    out = {}
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link->" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif not p.is_file():
                out[rel] = "special"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Path]:
    """A workspace next to an 'outside' directory holding a secret, plus a few traps inside."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (ws / "config.yaml").write_text("name: demo\nport: 8080\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "a.md").write_text("# A\nhello world\n")
    (ws / "docs" / "b.md").write_text("# B\nsecond file\n")
    (ws / "link_out").symlink_to(outside / "secret.txt")
    (ws / "dir_link_out").symlink_to(outside)
    (ws / "link_in").symlink_to(ws / "config.yaml")
    (ws / "abs_link").symlink_to("/etc/passwd")
    (ws / "docs" / "up").symlink_to("..")
    os.link(outside / "secret.txt", ws / "hardlink")
    os.mkfifo(ws / "fifo")
    return {"ws": ws, "outside": outside}


@pytest.fixture
def toolbox(sandbox) -> WorkspaceToolbox:
    return WorkspaceToolbox(sandbox["ws"], WorkspaceLimits(max_write_bytes=4096, max_read_bytes=64 * 1024))


@pytest.fixture
def ctx() -> ToolContext:
    return ToolContext(run_key="test-run")
