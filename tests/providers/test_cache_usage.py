"""Cache read and write counts as each provider documents them in its usage object."""

from agent.providers.assemble import usage_from_anthropic, usage_from_openai, usage_from_responses
from agent.state import usage_from_dict


def test_anthropic_cache_creation_is_the_cache_write() -> None:
    usage = usage_from_anthropic(
        {
            "input_tokens": 50,
            "cache_creation_input_tokens": 1200,
            "cache_read_input_tokens": 3000,
            "cache_creation": {"ephemeral_5m_input_tokens": 1200, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 20,
        }
    )
    assert (usage.prompt_tokens, usage.cached_tokens, usage.cache_write_tokens) == (4250, 3000, 1200)


def test_openrouter_chat_details_carry_cache_writes() -> None:
    # openrouter.ai/docs/use-cases/usage-accounting: prompt_tokens_details.cache_write_tokens
    usage = usage_from_openai(
        {
            "prompt_tokens": 194,
            "completion_tokens": 2,
            "total_tokens": 196,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100, "audio_tokens": 0},
        }
    )
    assert (usage.cached_tokens, usage.cache_write_tokens) == (0, 100)


def test_responses_input_details_carry_cache_writes() -> None:
    usage = usage_from_responses(
        {
            "input_tokens": 900,
            "output_tokens": 5,
            "input_tokens_details": {"cached_tokens": 512, "cache_write_tokens": 64},
        }
    )
    assert (usage.cached_tokens, usage.cache_write_tokens) == (512, 64)


def test_providers_that_do_not_report_writes_leave_it_unknown() -> None:
    usage = usage_from_openai({"prompt_tokens": 339, "prompt_cache_hit_tokens": 320})
    assert usage.cached_tokens == 320
    assert usage.cache_write_tokens is None


def test_the_write_count_survives_the_round_record() -> None:
    usage = usage_from_anthropic({"input_tokens": 1, "cache_creation_input_tokens": 7, "output_tokens": 1})
    assert usage_from_dict(usage.to_dict()).cache_write_tokens == 7
