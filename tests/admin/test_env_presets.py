"""Environment providers: the preset comes from OPENAI_PRESET or is guessed from the base URL host."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from chatapp.env_providers import anthropic_provider, guess_preset, openai_provider


@pytest.mark.parametrize(
    ("url", "preset"),
    [
        ("https://api.deepseek.com/v1", "deepseek"),
        ("https://api.deepseek.com", "deepseek"),
        ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "qwen"),
        ("https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen"),
        ("https://generativelanguage.googleapis.com/v1beta/openai/", "gemini"),
        ("https://openrouter.ai/api/v1", "openrouter"),
        ("https://api.anthropic.com/v1", "anthropic"),
        ("https://api.openai.com/v1", "openai"),
        ("https://evil-api.deepseek.com.example.org/v1", "openai"),  # a suffix, not a lookalike
    ],
)
def test_the_preset_is_guessed_from_the_host(url, preset):
    guessed, origin = guess_preset(url)
    assert guessed == preset
    assert ("guessed from the base URL host" in origin) == (preset != "openai")


def test_openai_preset_wins_over_the_guess(monkeypatch):
    monkeypatch.setenv("OPENAI_PRESET", "vllm")
    values = openai_provider("https://api.deepseek.com/v1", "chat", "m")
    assert values["preset"] == "vllm" and values["preset_origin"] == "OPENAI_PRESET"


def test_a_guessed_anthropic_host_makes_an_anthropic_provider(monkeypatch):
    values = openai_provider("https://api.anthropic.com", "chat", "claude-sonnet-5")
    assert values["kind"] == "anthropic" and values["preset"] == "anthropic"


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("OPENAI_PRESET", "nonsense", "OPENAI_PRESET: unknown preset"),
        ("OPENAI_EXTRA_BODY", '{"model": "x"}', "OPENAI_EXTRA_BODY: the extra body may not set model"),
        ("OPENAI_EXTRA_BODY", "[1]", "OPENAI_EXTRA_BODY: the extra body must be a JSON object"),
        ("OPENAI_EXTRA_BODY", "{nope", "OPENAI_EXTRA_BODY: not JSON"),
        ("OPENAI_THINKING", "maybe", "OPENAI_THINKING: expected on or off"),
        ("OPENAI_THINKING_BUDGET", "2000", "does not support thinking_budget"),
        ("OPENAI_IDLE_TIMEOUT", "soon", "OPENAI_IDLE_TIMEOUT: expected a number"),
    ],
)
def test_bad_env_knobs_stop_the_start_naming_the_variable(monkeypatch, name, value, error):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=error.replace("(", r"\(")):
        openai_provider("https://api.openai.com/v1", "chat", "gpt-5")


def test_anthropic_env_knobs(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_THINKING", "on")
    monkeypatch.setenv("ANTHROPIC_THINKING_BUDGET", "10000")
    monkeypatch.setenv("ANTHROPIC_IDLE_TIMEOUT", "600")
    values = anthropic_provider("claude-sonnet-4-5")
    assert values["thinking"] == "on" and values["thinking_budget"] == 10000 and values["idle_timeout"] == 600
