"""OpenAI Chat Completions adapter: OpenAI, DeepSeek, Qwen compatible mode, vLLM, llama.cpp,
Ollama, LM Studio and the demo model (R-PROV-1). Differences between them are capability
profiles (``profiles.py``) and tolerance in the accumulator (``openai_chat_stream.py``), never
branches on the provider's name.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agent.providers import openai_chat_request, openai_chat_stream
from agent.providers.http import HttpProvider, StreamAccumulator
from agent.providers.types import ModelEvent, ModelRequest


class OpenAIChatProvider(HttpProvider):
    kind: ClassVar[str] = "openai_chat"

    def url(self) -> str:
        return self.settings.base_url.rstrip("/") + "/chat/completions"

    def auth_headers(self) -> dict[str, str]:
        # Local servers (Ollama, llama.cpp, the demo model) need no key.
        return {"authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}

    def build_payload(self, request: ModelRequest) -> dict[str, Any]:
        return openai_chat_request.build_payload(
            request, self.capabilities, model=self.settings.model, max_output=self.settings.max_output_tokens
        )

    def new_accumulator(self) -> StreamAccumulator:
        return openai_chat_stream.ChatAccumulator()

    def events_from_body(self, body: dict[str, Any]) -> list[ModelEvent]:
        return openai_chat_stream.events_from_completion(body)
