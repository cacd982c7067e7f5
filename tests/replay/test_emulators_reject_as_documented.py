"""Each strict emulator, asked a wrong follow-up over HTTP, answers exactly as its provider documents:
status, error type and message (the wording sources are in docs/providers.md)."""

from __future__ import annotations

import httpx
from replay_anthropic_emulator import MUST_START, AnthropicEmulator
from replay_chat_emulators import DEEPSEEK_MISSING, DeepSeekEmulator, GeminiEmulator
from replay_emulator_http import serve
from replay_responses_emulator import ResponsesEmulator

USER = {"role": "user", "content": "读取 config.yaml"}


async def _post(app, path: str, body: dict, headers: dict | None = None) -> httpx.Response:
    async with serve(app) as base, httpx.AsyncClient() as http:
        return await http.post(base + path, json=body, headers=headers or {})


async def test_deepseek_without_reasoning_content():
    emulator = DeepSeekEmulator()
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    body = {"model": "deepseek-v4-pro", "messages": [
        USER, {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"}]}
    response = await _post(emulator.app(), "/v1/chat/completions", body)
    assert response.status_code == 400
    assert response.json() == {"error": {"message": DEEPSEEK_MISSING, "type": "invalid_request_error",
                                         "param": None, "code": "invalid_request_error"}}
    body["messages"][1]["reasoning_content"] = ""
    assert (await _post(emulator.app(), "/v1/chat/completions", body)).status_code == 200


async def test_gemini_without_thought_signature_in_a_list_shaped_body():
    emulator = GeminiEmulator()
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    body = {"model": "gemini-3-pro-preview", "messages": [
        USER, {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"}]}
    response = await _post(emulator.app(), "/v1/chat/completions", body)
    assert response.status_code == 400
    [wrapped] = response.json()
    assert wrapped["error"]["status"] == "INVALID_ARGUMENT" and wrapped["error"]["code"] == 400
    assert wrapped["error"]["message"].startswith(
        "Function call is missing a thought_signature in functionCall parts. This is required for tools"
    )
    assert "function call `default_api:read_file` , position 1" in wrapped["error"]["message"]


async def test_anthropic_tool_use_turn_without_its_thinking_block():
    emulator = AnthropicEmulator()
    body = {"model": "claude-fable-5-1", "max_tokens": 100, "messages": [
        USER,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "{}"}]}]}
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    response = await _post(emulator.app(), "/v1/messages", body, headers)
    assert response.status_code == 400
    assert response.json()["type"] == "error"
    assert response.json()["error"] == {"type": "invalid_request_error", "message": MUST_START.format(i=1, found="tool_use")}
    body["messages"][1]["content"].insert(0, {"type": "thinking", "thinking": "x", "signature": "forged"})
    response = await _post(emulator.app(), "/v1/messages", body, headers)
    assert response.json()["error"]["message"] == "messages.1.content.0: Invalid `signature` in `thinking` block"


async def test_responses_reasoning_by_id_without_storage_and_a_forged_blob():
    emulator = ResponsesEmulator()
    body = {"model": "gpt-5.2", "store": False, "input": [
        USER, {"type": "reasoning", "id": "rs_1", "summary": []}]}
    response = await _post(emulator.app(), "/v1/responses", body)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false. Try again with "
        "`store` set to true, or remove this item from your input.")
    body["input"][1]["encrypted_content"] = "gAAAAforgedblob=="
    error = (await _post(emulator.app(), "/v1/responses", body)).json()["error"]
    assert error == {"message": "The encrypted content gAAA...ob== could not be verified.",
                     "type": "invalid_request_error", "param": None, "code": "invalid_encrypted_content"}
