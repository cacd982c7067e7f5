"""What the chat page shows for each exchange: the user's message, the run, its rounds and calls."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.utils.safestring import SafeString, mark_safe

from agent.replay import blocks_from_dicts, opaque_size
from chatapp import event_log
from chatapp.costs import CostTotal, total_of
from chatapp.markdown import render_markdown
from chatapp.models import Conversation, Message, Run, ToolLink
from chatapp.redaction import redact_text
from chatapp.services import branches, mcp_oauth, policies
from chatapp.services.approvals import approver_for
from chatapp.services.branches import Position
from chatapp.services.workspace_files import FILE_WRITERS, written_path
from chatapp.views.failures import Failure, explain
from chatapp.views.page_rows import PageRows
from chatapp.views.timeline import timeline, timeline_of_nothing
from chatapp.workspaces import workspace_path


@dataclass
class Exchange:
    user: Message | None
    run: Run | None
    answer_html: SafeString | None = None
    answer_partial: bool = False
    rounds: list[Any] = field(default_factory=list)
    calls_by_round: dict[int, list[Any]] = field(default_factory=dict)
    cost: CostTotal = field(default_factory=CostTotal)
    links: list[Any] = field(default_factory=list)  # ToolLinks, each with .host and .safe
    written: list[str] = field(default_factory=list)  # workspace paths this run's file tools wrote
    question_at: Position | None = None  # ‹ i/n › among edits of the question
    answer_at: Position | None = None  # ‹ i/n › among regenerations of the answer
    failure: Failure | None = None  # a failed run explained in words (chatapp/views/failures.py)
    waiting: list[Any] = field(default_factory=list)  # calls waiting for a decision (the approval card)
    timeline: dict[str, Any] = field(default_factory=dict)  # the waterfall's rows (views/timeline.py)
    sign_ins: list[dict] = field(default_factory=list)  # OAuth servers the run waits for (issue 13)
    files: list[Any] = field(default_factory=list)  # the question's attached uploads (Message.attached)
    # A streaming run's text so far and its last frame's number (the page's socket resumes after it).
    streamed: str = ""
    streamed_seq: int = 0
    # How tall the answer will roughly be drawn, as a class: an answer off screen is laid out only when
    # it comes near (content-visibility), and until then takes this height (static/css/app.css).
    height: str = ""


def _exchange(run: Run, include_user: bool, rows: PageRows | None = None) -> Exchange:
    """One run's exchange; ``rows``: what the page read for all its runs at once (page_rows.py)."""
    if rows is not None:
        answer = rows.answers.get(run.pk)
    else:
        answer = Message.objects.filter(run=run, role=Message.Role.ASSISTANT).order_by("-id").first()
    html = mark_safe(render_markdown(answer.content)) if answer else None  # noqa: S308 - nh3-sanitised
    # A run stopped or failed mid-answer keeps what was written, marked partial (store._fail).
    # A round's request (the whole history before it) is the trace's, not the page's (page_rows.py).
    rounds = list(run.rounds.all() if rows is not None else run.rounds.defer("request"))
    calls: dict[int, list[Any]] = {}
    root = workspace_path(run.conversation.owner_id, run.conversation_id)
    written: list[str] = []
    all_calls = list(run.tool_calls.all())
    for call in all_calls:
        setattr(call, "brief", brief_arguments(call.arguments))  # noqa: B010 - for the template
        calls.setdefault(call.round_index, []).append(call)
        path = (
            written_path(root, call.arguments)
            if call.name in FILE_WRITERS and call.status == "succeeded"
            else None
        )
        setattr(call, "file_path", path)  # noqa: B010 - shown by the template; not a column
        if path and path not in written:
            written.append(path)
    for r in rounds:
        # Shown beside the round in the template; not columns.
        setattr(r, "calls", calls.get(r.index, []))  # noqa: B010
        setattr(r, "reasoning", round_reasoning(r.response))  # noqa: B010
    user = run.user_message if include_user else None
    return Exchange(
        user=user,
        files=user.attached() if user is not None else [],
        run=run,
        answer_html=html,
        answer_partial=bool(answer and answer.partial),
        rounds=rounds,
        calls_by_round=calls,
        cost=total_of(rounds),
        links=[link_view(link) for link in run.links.all()],
        written=written,
        question_at=_question_at(run, rows),
        answer_at=rows.answer_at(run) if rows is not None else branches.run_position(run),
        failure=explain(run) if run.status == Run.Status.FAILED else None,
        waiting=waiting_calls(all_calls) if run.is_active else [],
        timeline=timeline(run, rows.events.get(run.pk, []) if rows is not None else None),
        sign_ins=_sign_ins(run) if run.status == Run.Status.AWAITING_SIGN_IN else [],
        height=drawn_height(answer.content if answer else "", len(all_calls)),
    )


# The height classes of static/css/app.css (``.h-s`` ...), each the tallest estimate it stands for.
HEIGHTS = ((240, "s"), (480, "m"), (960, "l"), (1920, "xl"))


def drawn_height(text: str, calls: int) -> str:
    """A rough class for how tall an answer is drawn on a wide screen: the header and the trace's
    summary, a line of code ~17 px (code does not wrap), a table row ~36 px, a line of prose ~24 px per
    90 characters, a tool call's line 28 px. Only a placeholder's size (measured against Chromium's
    drawing of bench/pageview's answers within a class); the browser keeps the real one once drawn."""
    px, code = 110 + 28 * calls, False
    for line in text.splitlines():
        if line.startswith("```"):
            code, px = not code, px + 12
        elif code:
            px += 17
        elif line.startswith("|"):
            px += 36
        else:
            px += 24 * (1 + len(line) // 90)
    return next((name for top, name in HEIGHTS if px <= top), "xxl")


def _question_at(run: Run, rows: PageRows | None) -> Position | None:
    if run.user_message is None:
        return None
    return (
        rows.question_at(run.user_message)
        if rows is not None
        else branches.message_position(run.user_message)
    )


def fresh_exchange(run: Run, with_files: bool) -> Exchange:
    """A run the send view has just queued, with its question: nothing of it is stored yet.

    Its rounds, calls, links, answer and timeline are all empty when the send commits; whatever the
    worker has written since reaches the page through the websocket's replay of the run (from its
    first frame), which the page asks for as soon as the exchange is in. Its question is a new leaf
    (``branches.leaf``: nothing follows a leaf) and the run its only answer, so neither has siblings
    to switch between. ``with_files``: the send attached uploads (else the files are not looked up).
    Eight queries fewer on every send (docs/performance.md).
    """
    files = run.user_message.attached() if with_files and run.user_message else []
    return Exchange(user=run.user_message, run=run, timeline=timeline_of_nothing(), files=files)


def waiting_calls(calls: list[Any]) -> list[Any]:
    """Calls waiting for a decision, each marked with who decides (its policy's approver)."""
    waiting = [c for c in calls if c.status == "awaiting_approval"]
    if waiting:
        rules = policies.load_rules()
        for call in waiting:
            call.approver = approver_for(call.name, rules)
    return waiting


def brief_arguments(arguments: Any, limit: int = 80) -> str:
    """A call's arguments on one short line, for the approval card ("to: 13800000000, text: hi")."""
    if isinstance(arguments, str) and len(arguments) < 100_000:
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    if isinstance(arguments, dict):
        text = ", ".join(f"{k}: {v}" for k, v in arguments.items())
    else:
        text = str(arguments or "")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def link_view(link: ToolLink) -> ToolLink:
    """Marks what the page needs to show a server's link safely (spec 2025-11-25, Safe URL Handling):
    only http(s) links are clickable; the host is shown apart (subdomain spoofing) and punycode
    (``xn--``) is flagged."""
    parts = urlsplit(link.url)
    host = parts.hostname or ""
    # Shown beside the link in the template; not columns.
    setattr(link, "safe", parts.scheme in ("http", "https") and bool(host))  # noqa: B010
    setattr(link, "host", host)  # noqa: B010
    setattr(link, "punycode", "xn--" in host)  # noqa: B010
    return link


def run_exchange(run: Run) -> Exchange:
    """One run's exchange alone, without its question (a run's fragment: its box starts empty while
    it streams, since the frames held for it are applied to it)."""
    return _exchange(run, include_user=False)


@dataclass(frozen=True)
class Earlier:
    """The exchanges on the path before the first one a page shows: how many, and the run the next
    load ends before (``earlier_items``)."""

    count: int
    before: int


def page_items(
    convo: Conversation, last: int, since: int | None = None
) -> tuple[list[Exchange], Earlier | None]:
    """The conversation page's exchanges: the ``last`` ones of its path (0: all), or every one from
    the run ``since`` on when it is on the path (an address naming an earlier exchange). A long
    conversation opens with its latest exchanges and brings the earlier ones as the person scrolls up:
    its page's cost no longer grows with its length (docs/performance.md, session 26)."""
    runs = branches.path(convo)
    ids = [run.pk for run in runs]
    start = ids.index(since) if since in ids else max(0, len(runs) - last) if last else 0
    return _window(convo, runs, start, len(runs), streamed=True)


def earlier_items(
    convo: Conversation, before: int, last: int
) -> tuple[list[Exchange], Earlier | None] | None:
    """The ``last`` exchanges before the run ``before`` on the path; None when that run is no longer on
    it (another tab switched the branch)."""
    runs = branches.path(convo)
    ids = [run.pk for run in runs]
    if before not in ids:
        return None
    end = ids.index(before)
    return _window(convo, runs, max(0, end - last) if last else 0, end, streamed=False)


def _window(
    convo: Conversation, runs: list[Run], start: int, end: int, *, streamed: bool
) -> tuple[list[Exchange], Earlier | None]:
    shown = runs[start:end]
    earlier = Earlier(start, shown[0].pk) if start and shown else None
    return _items(convo, shown, streamed), earlier


def _items(convo: Conversation, runs: list[Run], streamed: bool) -> list[Exchange]:
    rows = PageRows.read(convo, runs)
    items = [_exchange(run, True, rows) for run in runs]
    for item in items if streamed else ():
        if item.run is not None and item.run.is_active and item.answer_html is None:
            item.streamed, item.streamed_seq = event_log.streamed_so_far(item.run.pk)
    return items


def round_reasoning(response: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the trace shows of a round's reasoning: the text (secrets removed) and, for what the
    provider sealed (signatures, encrypted reasoning, thought signatures), only "opaque, N bytes"."""
    choices = (response or {}).get("choices") or []
    if not choices:
        return None
    choice = choices[0]
    text = redact_text(choice.get("reasoning") or "")
    sealed = [
        {"type": b.type, "opaque_bytes": b.opaque_bytes} for b in blocks_from_dicts(choice.get("replay"))
    ]
    for call in choice.get("tool_calls") or ():
        extra = call.get("provider_extra")
        if extra:
            label = f"thought signature of {call.get('name')}"
            sealed.append({"type": label, "opaque_bytes": opaque_size(extra)})
    if not text and not sealed:
        return None
    return {"text": text, "blocks": sealed}


def _sign_ins(run: Run) -> list[dict]:
    """The sign-ins this run waits for (named when it parked), still missing now."""
    from chatapp.frames import Kind
    from chatapp.models import RunEvent

    last = RunEvent.objects.filter(run=run, type=Kind.STATUS).order_by("-seq").first()
    names = {s.get("name") for s in (last.payload.get("servers") or [])} if last else set()
    return mcp_oauth.sign_ins_needed(run.conversation.owner_id, only=names or None)
