"""The context window an Ollama server really runs a model with.

Ollama truncates the start of a prompt longer than its context silently (system prompt and tools
first), and its OpenAI-compatible route ignores ``num_ctx``. The window it runs with is not what the
model could take: "Ollama defaults to the following context lengths based on VRAM: < 24 GiB VRAM:
4k context …" unless the Modelfile sets ``num_ctx`` or the server runs with OLLAMA_CONTEXT_LENGTH
(ollama/ollama docs/context-length.mdx). So before a run we ask the server:

1. ``GET /api/ps``: a loaded model's ``context_length``, "the context length allocated right now";
2. ``POST /api/show``: ``num_ctx`` in the model's ``parameters`` (its Modelfile);
3. neither: ``None``, and the caller uses the preset's documented default (4,096).
"""

from __future__ import annotations

import re
from typing import Any

import httpx

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def server_root(base_url: str) -> str:
    """``http://host:11434/v1`` -> ``http://host:11434``: the native API sits beside /v1."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _same_model(entry: dict[str, Any], model: str) -> bool:
    names = {entry.get("name"), entry.get("model")}
    return model in names or f"{model}:latest" in names


async def _json(http: httpx.AsyncClient, method: str, url: str, timeout: float, **kw: Any) -> Any:
    try:
        response = await http.request(method, url, timeout=timeout, **kw)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


async def served_context_length(
    http: httpx.AsyncClient, base_url: str, model: str, *, timeout: float = 5.0
) -> int | None:
    """The context length the server runs ``model`` with, or None when it does not say."""
    root = server_root(base_url)
    running = await _json(http, "GET", f"{root}/api/ps", timeout)
    for entry in (running or {}).get("models") or []:
        length = entry.get("context_length") if isinstance(entry, dict) else None
        if isinstance(length, int) and length > 0 and _same_model(entry, model):
            return length
    shown = await _json(http, "POST", f"{root}/api/show", timeout, json={"model": model})
    match = _NUM_CTX.search(str((shown or {}).get("parameters") or ""))
    return int(match.group(1)) if match else None


def effective_window(configured: int | None, served: int | None, preset_default: int | None) -> int | None:
    """The smaller of what the admin says and what the server runs (a larger one would be truncated)."""
    limits = [v for v in (configured, served or preset_default) if v]
    return min(limits) if limits else None
