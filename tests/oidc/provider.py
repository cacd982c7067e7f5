"""Start the real OpenID provider of tests/oidc/node (panva/oidc-provider on Node 22) for a test."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.npm_ci import npm_ci

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = NODE_DIR / "node_modules" / "node" / "bin" / "node"


def ensure_installed() -> None:
    """``npm ci`` when Node 22 or the provider is missing, or the lock file is newer than the install."""
    stamp = NODE_DIR / "node_modules" / ".package-lock.json"
    lock = NODE_DIR / "package-lock.json"

    def fresh() -> bool:
        return (
            NODE.exists()
            and (NODE_DIR / "node_modules" / "oidc-provider").exists()
            and stamp.exists()
            and lock.stat().st_mtime <= stamp.stat().st_mtime
        )

    npm_ci(NODE_DIR, fresh)


@dataclass
class RunningProvider:
    process: subprocess.Popen
    issuer: str

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(port: int, clients: list[dict], accounts: dict[str, dict], log: Path) -> RunningProvider:
    ensure_installed()
    env = {
        **os.environ,
        "OIDC_PORT": str(port),
        "OIDC_CLIENTS": json.dumps(clients),
        "OIDC_ACCOUNTS": json.dumps(accounts),
    }
    handle = log.open("w")
    process = subprocess.Popen(
        [str(NODE), "server.mjs"], cwd=NODE_DIR, env=env, stdout=subprocess.PIPE, stderr=handle, text=True
    )
    line = process.stdout.readline()  # blocks until the server prints "ready <issuer>" (or exits)
    if not line.startswith("ready "):
        process.kill()
        raise RuntimeError(f"the OpenID provider did not start: {line!r}; see {log}")
    return RunningProvider(process, line.split()[1])
