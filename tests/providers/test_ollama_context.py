"""An Ollama provider's context window is the one the server runs the model with (/api/ps, then
/api/show's num_ctx, then Ollama's documented 4k default), never an assumed 128k."""

from __future__ import annotations

from provider_fixture_server import Reply

from agent.context.budget import ContextLimits
from agent.providers import ollama, profiles
from agent.providers.settings import ProviderSettings

PS = {"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "size": 6591830464, "context_length": 32768}]}
SHOW = {
    "parameters": 'temperature 0.7\nnum_ctx                        8192\nstop "<|im_end|>"',
    "model_info": {"qwen3.context_length": 40960},
}


async def test_a_loaded_model_reports_its_allocated_context(server, http):
    server.queue(Reply.json(200, PS))
    assert await ollama.served_context_length(http, server.base_url + "/v1", "qwen3:8b") == 32768
    assert [r.path for r in server.requests] == ["/api/ps"]


async def test_an_unloaded_model_is_read_from_its_modelfile(server, http):
    server.queue(Reply.json(200, {"models": []}), Reply.json(200, SHOW))
    assert await ollama.served_context_length(http, server.base_url + "/v1", "qwen3:8b") == 8192
    assert [r.path for r in server.requests] == ["/api/ps", "/api/show"]
    assert server.requests[1].json() == {"model": "qwen3:8b"}


async def test_without_either_the_documented_default_applies(server, http):
    # model_info's context_length is what the model could take, not what the server runs: ignored.
    server.queue(
        Reply.json(200, {"models": []}), Reply.json(200, {"parameters": "", "model_info": SHOW["model_info"]})
    )
    served = await ollama.served_context_length(http, server.base_url + "/v1", "qwen3:8b")
    caps = profiles.resolve("ollama", "qwen3:8b")
    assert served is None and ollama.effective_window(128_000, served, caps.default_context_window) == 4096


async def test_the_worker_lowers_the_runs_window_to_the_servers(server, http):
    from chatapp.worker.windows import served_limits

    server.queue(Reply.json(200, PS))
    settings = ProviderSettings(
        name="o", kind="openai_chat", base_url=server.base_url + "/v1", model="qwen3:8b", preset="ollama"
    )
    limits = await served_limits(
        http, ContextLimits(context_window=128_000), settings, profiles.resolve("ollama", "qwen3:8b")
    )
    assert limits.context_window == 32768
    # Another preset is never probed.
    untouched = await served_limits(
        http, ContextLimits(context_window=128_000), settings, profiles.resolve("vllm", "m")
    )
    assert untouched.context_window == 128_000 and len(server.requests) == 1


async def test_a_dead_server_falls_back_to_the_default(http):
    assert await ollama.served_context_length(http, "http://127.0.0.1:9/v1", "m", timeout=1) is None
