"""The OAuth-protected test MCP server (tests/mcp/servers/oauth_server.py) as a fixture.

The fixture also pins this process's channel layer to the app's own (``chatapp.settings``) for the
test: a sign-in's thread and the callback view meet on it, and the durability tests point the layer
of this process at their private Redis for the rest of the session (tests/durable/conftest.py),
which their reconnect test kills and restarts. The server's output goes to a log file whose tail is
in the error when it does not come up, so a failure inside the full suite says why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.mcp.mcp_helpers import free_port, wait_for_port

SERVER = Path(__file__).resolve().parent / "servers" / "oauth_server.py"
# Start-up is about a second on a quiet machine; the full suite on two shared cores has seen far
# more. This bounds a server that never comes up, it measures nothing.
START_DEADLINE = 60.0


@dataclass
class OAuthServer:
    base: str

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def hook(self, name: str, **settings) -> dict:
        method = "GET" if name == "stats" else "POST"
        response = httpx.request(method, f"{self.base}/test/{name}", json=settings or None, trust_env=False)
        response.raise_for_status()
        return response.json()

    def consent(self, authorize_url: str, answer: str = "allow", subject: str = "alice") -> str:
        """What a person does from the authorization URL on: returns where the browser is sent back to."""
        page = httpx.get(authorize_url, follow_redirects=True, trust_env=False)
        assert "allow clearloop?" in page.text, (page.status_code, page.text[:500])
        response = httpx.post(str(page.url), data={"answer": answer, "subject": subject}, trust_env=False)
        assert response.status_code == 302
        return response.headers["location"]


def _environment() -> dict[str, str]:
    # What the server needs, nothing a test may have left in this process's environment.
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    return {name: os.environ[name] for name in keep if name in os.environ}


@pytest.fixture
def oauth_server(settings, tmp_path):
    from chatapp import settings as configured

    settings.CHANNEL_LAYERS = configured.CHANNEL_LAYERS
    port = free_port()
    log = tmp_path / "oauth_server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_environment(),
        )
    try:
        try:
            wait_for_port(port, proc, START_DEADLINE)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(
                f"the OAuth test server did not start ({exc}):\n{log.read_text()[-3000:]}"
            ) from exc
        yield OAuthServer(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            # uvicorn waits for open sessions (a worker's pooled one) to close; nothing to keep here.
            proc.kill()
            proc.wait(10)
