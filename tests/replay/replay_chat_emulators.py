"""Strict Chat Completions emulators: DeepSeek V4 (thinking mode) and Gemini 3 (OpenAI-compatible).

DeepSeek (https://api-docs.deepseek.com/guides/thinking_mode): thinking is on by default; "between
two user messages, if the model performed a tool call, the intermediate assistant's
reasoning_content must participate in the context concatenation" in all later requests, otherwise
HTTP 400 invalid_request_error "The reasoning_content in the thinking mode must be passed back to
the API." Streams follow the recorded fixture: reasoning_content deltas first, then the tool call,
usage on the finish chunk.

Gemini (https://ai.google.dev/gemini-api/docs/thought-signatures, OpenAI compatibility page): each
tool call carries ``extra_content.google.thought_signature``; a function call of the current turn
sent back without it is HTTP 400 INVALID_ARGUMENT "Function call is missing a thought_signature in
functionCall parts. ..." in a *list-shaped* body. Unknown schema keywords are rejected the same way
("Invalid JSON payload received. Unknown name ..."), as are ``parallel_tool_calls`` and ``n``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from replay_emulator_http import PrefixCache, json_response, seal, sealed_ok, sse
from replay_seed import FINAL_TEXT, reasoning_for, round_calls
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

DEEPSEEK_MISSING = "The reasoning_content in the thinking mode must be passed back to the API."
GEMINI_MISSING = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to "
    "work correctly, and missing thought_signature may lead to degraded model performance. Additional "
    "data, function call `default_api:{name}` , position {position}. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
SKIP_VALIDATOR = "skip_thought_signature_validator"
GEMINI_SCHEMA_KEYS = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "items", "properties", "required",
        "anyOf", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern",
        "minProperties", "maxProperties", "default", "example", "propertyOrdering",
    }
)


class Rejected(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def turns(messages: list[dict[str, Any]]) -> list[list[tuple[int, dict[str, Any]]]]:
    """Messages between user messages, with their positions."""
    out: list[list[tuple[int, dict[str, Any]]]] = [[]]
    for position, message in enumerate(messages):
        if message.get("role") == "user":
            out.append([])
        else:
            out[-1].append((position, message))
    return out


def results_in_current_turn(messages: list[dict[str, Any]]) -> int:
    return sum(1 for _, m in turns(messages)[-1] if m.get("role") == "tool")


def check_tool_pairing(messages: list[dict[str, Any]], error: Any) -> None:
    """OpenAI's rule: a tool message answers a tool call of the assistant message before it."""
    open_ids: set[str] = set()
    for message in messages:
        if message.get("role") == "assistant":
            open_ids = {c.get("id") for c in message.get("tool_calls") or ()}
        elif message.get("role") == "tool" and message.get("tool_call_id") not in open_ids:
            raise Rejected(error(400, "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'."))


@dataclass
class ChatEmulator:
    """Common shape: record each body, validate, answer the seed scenario (streamed or not)."""

    model_prefix: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    cache: PrefixCache = field(default_factory=PrefixCache)

    def app(self) -> Starlette:
        routes = [Route(p, self.endpoint, methods=["POST"]) for p in ("/v1/chat/completions", "/chat/completions")]
        return Starlette(routes=routes)

    async def endpoint(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(body)
        try:
            self.validate(body, request)
        except Rejected as rejected:
            return rejected.response
        seen = results_in_current_turn(body["messages"])
        calls = round_calls(seen)
        chunks = self.chunks(seen, calls, body)
        if body.get("stream"):
            return sse((None, c) for c in [*chunks, "[DONE]"])
        return json_response(200, self.completion(chunks))

    # -- per provider ----------------------------------------------------------------------------
    def error(self, status: int, message: str) -> Response:
        raise NotImplementedError

    def validate(self, body: dict[str, Any], request: Request) -> None:
        if not str(body.get("model", "")).startswith(self.model_prefix):
            raise Rejected(self.error(400, f"Model Not Exist: {body.get('model')}"))
        check_tool_pairing(body.get("messages") or [], self.error)

    def call_extra(self, name: str, arguments: str, position: int) -> dict[str, Any]:
        return {}

    def reasoning_delta(self, text: str) -> dict[str, Any]:
        return {}

    def usage(self, body: dict[str, Any], reasoning: str) -> dict[str, Any]:
        """Counted from the request, with the prompt cache's hit (automatic prefix caching)."""
        read, _, total = self.cache.automatic([body.get("tools") or [], *body["messages"]])
        thought = len(reasoning) // 2
        completion = 40 + thought
        usage = {"prompt_tokens": total, "completion_tokens": completion, "total_tokens": total + completion}
        return {**usage, **self.usage_details(read, total, thought)}

    def usage_details(self, read: int, total: int, thought: int) -> dict[str, Any]:
        return {}

    # -- the answer ------------------------------------------------------------------------------
    def chunks(self, seen: int, calls: list[tuple[str, str]] | None, body: dict[str, Any]) -> list[dict[str, Any]]:
        base = {"id": f"emu-{seen}", "object": "chat.completion.chunk", "created": int(time.time()), "model": body["model"]}

        def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**base, "choices": [choice], "usage": usage}

        out = [chunk({"role": "assistant", "content": None, **self.reasoning_delta("")})]
        reasoning = reasoning_for(seen)
        if self.reasoning_delta(""):
            for piece in (reasoning[: len(reasoning) // 2], reasoning[len(reasoning) // 2 :]):
                out.append(chunk({"content": None, **self.reasoning_delta(piece)}))
        usage = self.usage(body, reasoning if self.reasoning_delta("") else "")
        if calls is None:
            for piece in (FINAL_TEXT[:5], FINAL_TEXT[5:]):
                out.append(chunk({"content": piece}))
            out.append(chunk({"content": ""}, "stop", usage))
            return out
        for position, (name, arguments) in enumerate(calls):
            call_id = f"call_{seen:02d}_{position}_{name}"
            first = {"index": position, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            first.update(self.call_extra(name, arguments, position))
            out.append(chunk({"tool_calls": [first]}))
            for piece in (arguments[:7], arguments[7:]):
                out.append(chunk({"tool_calls": [{"index": position, "function": {"arguments": piece}}]}))
        out.append(chunk({"content": ""}, "tool_calls", usage))
        return out

    @staticmethod
    def completion(chunks: list[dict[str, Any]]) -> dict[str, Any]:
        """The same answer as one non-streamed body."""
        message: dict[str, Any] = {"role": "assistant", "content": None}
        calls: dict[int, dict[str, Any]] = {}
        finish, usage = None, None
        for c in chunks:
            choice = c["choices"][0]
            finish = choice["finish_reason"] or finish
            usage = c["usage"] or usage
            for key, value in choice["delta"].items():
                if key in ("content", "reasoning_content") and value:
                    message[key] = (message.get(key) or "") + value
                elif key == "tool_calls":
                    for call in value:
                        target = calls.setdefault(call["index"], {"function": {"arguments": ""}})
                        for k, v in call.items():
                            if k == "function":
                                target["function"]["name"] = v.get("name") or target["function"].get("name")
                                target["function"]["arguments"] += v.get("arguments") or ""
                            elif k != "index":
                                target[k] = v
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        first = chunks[0]
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        return {"id": first["id"], "object": "chat.completion", "created": first["created"],
                "model": first["model"], "choices": [choice], "usage": usage}


class DeepSeekEmulator(ChatEmulator):
    def __init__(self) -> None:
        super().__init__(model_prefix="deepseek-v4")

    def error(self, status: int, message: str) -> Response:
        body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}
        return json_response(status, body)

    def reasoning_delta(self, text: str) -> dict[str, Any]:
        return {"reasoning_content": text}

    def usage_details(self, read: int, total: int, thought: int) -> dict[str, Any]:
        # As recorded (reference/providers.md §1.5): cache hits and misses, reasoning tokens.
        return {"prompt_cache_hit_tokens": read, "prompt_cache_miss_tokens": total - read,
                "completion_tokens_details": {"reasoning_tokens": thought}}

    def validate(self, body: dict[str, Any], request: Request) -> None:
        super().validate(body, request)
        thinking = (body.get("thinking") or {}).get("type", "enabled") != "disabled"
        if not thinking:
            return
        for turn in turns(body["messages"]):
            assistants = [m for _, m in turn if m.get("role") == "assistant"]
            if any(m.get("tool_calls") for m in assistants):
                if any(not isinstance(m.get("reasoning_content"), str) for m in assistants):
                    raise Rejected(self.error(400, DEEPSEEK_MISSING))


class GeminiEmulator(ChatEmulator):
    """Gemini 3 on /v1beta/openai/: thought signatures per function call, strict schema subset."""

    def __init__(self) -> None:
        super().__init__(model_prefix="gemini-3")

    def error(self, status: int, message: str) -> Response:
        # The OpenAI-compatible endpoint wraps Google's error in a list.
        body = [{"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}]
        return json_response(status, body)

    def call_extra(self, name: str, arguments: str, position: int) -> dict[str, Any]:
        # Gemini 3 signs the first function call of a step (parallel calls after it carry none).
        if position:
            return {}
        return {"extra_content": {"google": {"thought_signature": seal("gemini", f"{name}\n{arguments}")}}}

    def usage_details(self, read: int, total: int, thought: int) -> dict[str, Any]:
        # Implicit caching (Gemini 2.5 and newer) is reported as prompt_tokens_details.cached_tokens
        # on the OpenAI-compatible endpoint (openai/openai-python#2544 shows such a body).
        return {"prompt_tokens_details": {"cached_tokens": read}}

    def validate(self, body: dict[str, Any], request: Request) -> None:
        for key in ("parallel_tool_calls", "n"):
            if key in body:
                raise Rejected(self.error(400, f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'))
        for number, tool in enumerate(body.get("tools") or ()):
            bad = unknown_schema_key(tool["function"].get("parameters") or {})
            if bad:
                where = f"tools[0].function_declarations[{number}].parameters"
                raise Rejected(self.error(400, f'Invalid JSON payload received. Unknown name "{bad}" at \'{where}\': Cannot find field.'))
        super().validate(body, request)
        turn = turns(body["messages"])[-1]  # "strict validation on the current turn"
        step = 0
        for _, message in turn:
            if message.get("role") != "assistant":
                continue
            for position, call in enumerate(message.get("tool_calls") or ()):
                function = call.get("function") or {}
                if position:
                    continue
                signature = ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")
                if signature is None:
                    raise Rejected(self.error(400, GEMINI_MISSING.format(name=function.get("name"), position=step + 1)))
                if signature == SKIP_VALIDATOR:
                    continue  # documented for history Gemini did not produce (or lost signatures)
                if not sealed_ok("gemini", f"{function.get('name')}\n{function.get('arguments')}", signature):
                    # The Gemini API's words (google-gemini/gemini-cli#13467); Vertex AI says "Unable to
                    # submit request because Thought signature is not valid." (decolua/9router#301).
                    raise Rejected(self.error(400, "Corrupted thought signature."))
            step += 1


def unknown_schema_key(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    for key, value in schema.items():
        if key not in GEMINI_SCHEMA_KEYS:
            return key
        nested = value.values() if key == "properties" and isinstance(value, dict) else [value]
        if key in ("properties", "items", "anyOf"):
            for sub in nested if key != "anyOf" else value:
                found = unknown_schema_key(sub)
                if found:
                    return found
    return None


OPENROUTER_UPSTREAM_MISSING = (
    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
    "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
    "previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


class OpenRouterEmulator(ChatEmulator):
    """OpenRouter in front of a Claude thinking model (openrouter.ai/docs/use-cases/reasoning-tokens,
    "Preserving reasoning blocks"): reasoning streams as ``reasoning`` text plus ``reasoning_details``
    entries (``reasoning.text`` fragments of one ``index``, its ``signature`` last; a
    ``reasoning.encrypted`` entry for redacted thinking), which must come back unmodified on the
    assistant message in tool-calling workflows. The upstream's refusal is passed through as OpenRouter
    documents errors (openrouter.ai/docs/api/reference/errors-and-debugging): ``{"error": {"code": 400,
    "message": "Provider returned error", "metadata": {"provider_name", "raw"}}}``, ``raw`` being
    Anthropic's own error body."""

    def __init__(self) -> None:
        super().__init__(model_prefix="anthropic/claude")

    def error(self, status: int, message: str) -> Response:
        raw = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        metadata = {"provider_name": "Anthropic", "raw": json.dumps(raw, ensure_ascii=False)}
        return json_response(status, {"error": {"code": status, "message": "Provider returned error", "metadata": metadata}})

    def reasoning_delta(self, text: str) -> dict[str, Any]:
        detail = {"type": "reasoning.text", "text": text, "index": 0, "format": "anthropic-claude-v1"}
        return {"reasoning": text, "reasoning_details": [detail]}

    def chunks(self, seen: int, calls: list[tuple[str, str]] | None, body: dict[str, Any]) -> list[dict[str, Any]]:
        out = super().chunks(seen, calls, body)
        reasoning = reasoning_for(seen)
        sealed = [{"type": "reasoning.text", "text": "", "index": 0, "signature": seal("thinking", reasoning)}]
        if seen == 0:
            sealed.append({"type": "reasoning.encrypted", "data": seal("redacted", reasoning), "index": 1,
                           "format": "anthropic-claude-v1"})
        signature = {**out[2], "choices": [{**out[2]["choices"][0], "delta": {"reasoning_details": sealed}}]}
        return [*out[:3], signature, *out[3:]]

    def completion(self, chunks: list[dict[str, Any]]) -> dict[str, Any]:  # type: ignore[override]
        body = ChatEmulator.completion(chunks)
        details: dict[int, dict[str, Any]] = {}
        for c in chunks:
            for entry in c["choices"][0]["delta"].get("reasoning_details") or ():
                target = details.setdefault(entry["index"], {})
                for key, value in entry.items():
                    if key == "text" and key in target:
                        target[key] += value
                    elif value is not None or key not in target:
                        target[key] = value
        message = body["choices"][0]["message"]
        message["reasoning"] = "".join(c["choices"][0]["delta"].get("reasoning") or "" for c in chunks)
        message["reasoning_details"] = [details[i] for i in sorted(details)]
        return body

    def validate(self, body: dict[str, Any], request: Request) -> None:
        super().validate(body, request)
        messages = body["messages"]
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        for i, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            details = message.get("reasoning_details") or []
            text = next((d for d in details if d.get("type") == "reasoning.text"), None)
            if i == last and message.get("tool_calls") and text is None:
                raise Rejected(self.error(400, OPENROUTER_UPSTREAM_MISSING.format(i=i - 1)))
            if text is not None and not sealed_ok("thinking", text.get("text", ""), text.get("signature")):
                raise Rejected(self.error(400, f"messages.{i - 1}.content.0: Invalid `signature` in `thinking` block"))


class GptOssVllmEmulator(ChatEmulator):
    """gpt-oss served by vLLM: the raw chain of thought streams in ``reasoning`` (vLLM's field, "used
    to be called reasoning_content"). The cookbook (developers.openai.com/cookbook/articles/gpt-oss/
    handle-raw-cot) says the CoT of a tool-calling turn must go back until the final answer ("crucial
    for the performance of tool calling"); vLLM reads ``reasoning`` on history messages. Nothing is
    rejected without it (the model only reasons worse), so this emulator records what came back and
    the test checks it."""

    def __init__(self) -> None:
        super().__init__(model_prefix="openai/gpt-oss")

    def error(self, status: int, message: str) -> Response:
        return json_response(status, {"error": {"message": message, "type": "BadRequestError", "param": None, "code": status}})

    def reasoning_delta(self, text: str) -> dict[str, Any]:
        return {"reasoning": text}

    def completion(self, chunks: list[dict[str, Any]]) -> dict[str, Any]:  # type: ignore[override]
        body = ChatEmulator.completion(chunks)
        body["choices"][0]["message"]["reasoning"] = "".join(
            c["choices"][0]["delta"].get("reasoning") or "" for c in chunks
        )
        return body
