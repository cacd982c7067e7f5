"""A per-conversation picture of token usage per round, as SVG geometry computed server-side.

Each bar is the round's prompt (the part read from the provider's prompt cache drawn darker at its
base) with its completion on top; the title spells out cache reads and writes and the round's cost,
and the conversation's cost heads the chart.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.formats import number_format
from django.utils.translation import gettext as _

from chatapp.costs import cost_label, total_of_values
from chatapp.models import Conversation, Round

WIDTH, HEIGHT, PAD = 600, 160, 24


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    prompt_y: float
    prompt_h: float
    completion_y: float
    completion_h: float
    cached_y: float
    cached_h: float
    label: str
    title: str
    # The numbers themselves, for the table a screen reader reads (and the tick under the bar).
    prompt: int = 0
    completion: int = 0
    read: int = 0
    written: int = 0
    cost: str = ""
    tick_x: float = 0.0


def no_bars() -> dict:
    """The chart of a conversation without rounds (nothing drawn)."""
    return {"bars": [], "width": WIDTH, "height": HEIGHT}


def usage_bars(conversation: Conversation) -> dict:
    rounds = list(
        Round.objects.filter(run__conversation=conversation)
        .order_by("run_id", "index")
        .values("run_id", "index", "usage", "cost", "cost_note")
    )
    if not rounds:
        return no_bars()
    usages = [r["usage"] or {} for r in rounds]
    totals = [(u.get("prompt_tokens") or 0, u.get("completion_tokens") or 0) for u in usages]
    peak = max(p + c for p, c in totals) or 1
    slot = (WIDTH - 2 * PAD) / len(rounds)
    scale = (HEIGHT - 2 * PAD) / peak
    bars = []
    for i, (r, usage, (prompt, completion)) in enumerate(zip(rounds, usages, totals, strict=True)):
        x = PAD + i * slot + slot * 0.15
        # A completion is often a hundredth of its prompt: never drawn thinner than 2 units, or it vanishes.
        prompt_h, completion_h = prompt * scale, max(completion * scale, 2.0 if completion else 0.0)
        read, written = usage.get("cached_tokens") or 0, usage.get("cache_write_tokens") or 0
        cached_h = min(read, prompt) * scale
        base = HEIGHT - PAD
        bars.append(
            Bar(
                x=round(x, 1),
                width=round(slot * 0.7, 1),
                prompt_y=round(base - prompt_h, 1),
                prompt_h=round(prompt_h, 1),
                completion_y=round(base - prompt_h - completion_h, 1),
                completion_h=round(completion_h, 1),
                cached_y=round(base - cached_h, 1),
                cached_h=round(cached_h, 1),
                label=f"{r['run_id']}.{r['index'] + 1}",
                prompt=prompt,
                completion=completion,
                read=read,
                written=written,
                cost=cost_label(r["cost"], r["cost_note"]),
                tick_x=round(x + slot * 0.35, 1),
                title=_(
                    "run %(run)s round %(round)s: %(prompt)s prompt (%(read)s cache read, %(written)s cache "
                    "write) + %(completion)s completion tokens, cost %(cost)s"
                )
                % {
                    "run": r["run_id"],
                    "round": r["index"] + 1,
                    "prompt": number_format(prompt, force_grouping=True),
                    "read": number_format(read, force_grouping=True),
                    "written": number_format(written, force_grouping=True),
                    "completion": number_format(completion, force_grouping=True),
                    "cost": cost_label(r["cost"], r["cost_note"]),
                },
            )
        )
    return {
        "bars": bars,
        "width": WIDTH,
        "height": HEIGHT,
        "peak": peak,
        "baseline": HEIGHT - PAD,
        "tick_y": HEIGHT - 8,
        "ticks": len(rounds) <= 30,  # round labels under the bars while they fit
        "cost": total_of_values(r["cost"] for r in rounds),
    }
