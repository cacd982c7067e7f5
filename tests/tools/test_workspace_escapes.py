"""A corpus of path escapes: each is refused by every file tool, and nothing changes on disk."""

import pytest
from tools_helpers import snapshot

# {ws} and {outside} are replaced by the real absolute paths.
ESCAPES = [
    "../outside/secret.txt",
    "..",
    "../",
    "../..",
    "../../etc/passwd",
    "./../outside/secret.txt",
    "docs/../../outside/secret.txt",
    "docs/../../../etc/passwd",
    "docs/./../../outside/secret.txt",
    "a/b/c/../../../../outside/secret.txt",
    "..//outside//secret.txt",
    "../outside/../outside/secret.txt",
    "./.././outside/secret.txt",
    "/etc/passwd",
    "/etc/shadow",
    "/proc/self/environ",
    "/proc/self/cwd/pyproject.toml",
    "/dev/zero",
    "/root/.ssh/id_rsa",
    "/tmp",
    "{outside}/secret.txt",
    "{outside}",
    "{ws}/../outside/secret.txt",
    "{ws}/docs/../../outside/secret.txt",
    "{ws}/link_out",
    "{ws}/dir_link_out/secret.txt",
    "//etc/passwd",
    "~",
    "~/secret.txt",
    "~root/.bashrc",
    "~/../../etc/passwd",
    "config.yaml\x00.txt",
    "\x00",
    "docs/a.md\x00/../../outside/secret.txt",
    "link_out",
    "dir_link_out",
    "dir_link_out/secret.txt",
    "dir_link_out/../outside/secret.txt",
    "link_in",
    "abs_link",
    "docs/up/../outside/secret.txt",
    "docs/up/link_out",
    "docs/up/config.yaml",
    "hardlink",
    "fifo",
    "..\\outside\\secret.txt",
    "docs\\..\\..\\outside\\secret.txt",
    "",
    "x" * 2000,
    "../" * 40 + "etc/passwd",
    "docs/" + "../" * 3 + "outside/secret.txt",
    "file:///etc/passwd",  # a relative name inside the workspace; read fails as missing, writes are fine
]
# These are legal names (a file literally called 'file:' would be inside): they are checked only for
# not touching anything outside, not for being refused.
HARMLESS_NAMES = {"file:///etc/passwd"}


def materialise(raw: str, sandbox) -> str:
    return raw.replace("{ws}", str(sandbox["ws"])).replace("{outside}", str(sandbox["outside"]))


CALLS = [
    ("read_file", lambda p: {"path": p}),
    ("write_file", lambda p: {"path": p, "content": "PWNED"}),
    ("append_file", lambda p: {"path": p, "content": "PWNED"}),
    ("search_files", lambda p: {"path": p, "pattern": "*", "target": "files"}),
    ("search_files", lambda p: {"path": p, "pattern": "SECRET", "target": "content"}),
]


def test_corpus_is_large_enough():
    assert len(ESCAPES) >= 50


@pytest.mark.parametrize("raw", ESCAPES, ids=[repr(e)[:40] for e in ESCAPES])
async def test_escape_is_refused_and_nothing_changes(raw, sandbox, toolbox, ctx):
    before_ws, before_out = snapshot(sandbox["ws"]), snapshot(sandbox["outside"])
    path = materialise(raw, sandbox)
    for name, build in CALLS:
        outcome = await toolbox.execute(name, build(path), ctx)
        if raw in HARMLESS_NAMES:
            continue
        if outcome.ok and name == "search_files":
            # Searching a directory inside the workspace is fine, as long as links were not followed.
            assert all("SECRET" not in str(m) for m in outcome.content["matches"])
            assert all("secret.txt" not in m["path"] for m in outcome.content["matches"])
            continue
        assert not outcome.ok, (name, raw, outcome)
        assert outcome.code in ("invalid_arguments", "execution_error"), outcome
        assert "TOP SECRET" not in (outcome.error or "")
    assert snapshot(sandbox["outside"]) == before_out
    after_ws = snapshot(sandbox["ws"])
    if raw in HARMLESS_NAMES:
        after_ws = {k: v for k, v in after_ws.items() if not k.startswith("file:")}
    assert after_ws == before_ws
    assert (sandbox["outside"] / "secret.txt").read_text() == "TOP SECRET\n"
