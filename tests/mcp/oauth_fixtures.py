"""The OAuth-protected test MCP server (tests/mcp/servers/oauth_server.py) as a fixture."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.mcp.mcp_helpers import free_port, wait_for_port

SERVER = Path(__file__).resolve().parent / "servers" / "oauth_server.py"


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


@pytest.fixture
def oauth_server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield OAuthServer(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            # uvicorn waits for open sessions (a worker's pooled one) to close; nothing to keep here.
            proc.kill()
            proc.wait(10)
