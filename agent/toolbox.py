"""The Toolbox interface: what the loop needs from tools, whatever provides them.

Built-in tools, MCP servers and gateway tools are all Toolboxes; ``CombinedToolbox`` (in
``agent/tools/combined.py``) puts several side by side. Validation against the JSON Schema and the
policy check happen in the loop, before ``execute`` is ever called (R-LOOP-4).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agent.messages import MediaPart, ToolSpec

RiskTier = Literal["read_only", "low", "high"]
OutcomeCode = Literal[
    "ok",
    "invalid_arguments",
    "unknown_tool",
    "denied",
    "timeout",
    "execution_error",
    "rate_limited",
    "outcome_unknown",
    # Nothing was sent: the tool's server needs a person to sign in first (MCP OAuth). The loop
    # puts the call back to "approved" and the run waits; it runs once someone has signed in.
    "sign_in_required",
]


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as the host knows it: the model-facing spec plus what the host needs to run it safely."""

    spec: ToolSpec
    # read_only tools may be re-run after a crash; anything else left running becomes `unknown`.
    risk: RiskTier = "read_only"
    idempotent: bool = False
    server: str | None = None  # the MCP server slug, None for built-ins
    remote_name: str | None = None  # the tool's name on its server (before namespacing)
    definition_hash: str | None = None  # hash of name, description, schema: approvals bind to it
    disabled_reason: str | None = None  # e.g. a broken schema: shown, never offered to the model
    hints: dict[str, Any] = field(default_factory=dict)  # MCP annotations, shown as hints only


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What running a tool gave. ``content`` is the value serialised into the tool message."""

    ok: bool
    content: Any
    code: OutcomeCode = "ok"
    error: str | None = None
    retry_after: float | None = None  # for rate_limited
    truncated: bool = False
    media: tuple[MediaPart, ...] = ()  # images/audio for models that accept them (content notes them)

    @classmethod
    def success(
        cls, content: Any, *, truncated: bool = False, media: tuple[MediaPart, ...] = ()
    ) -> ToolOutcome:
        return cls(ok=True, content=content, truncated=truncated, media=media)

    @classmethod
    def failure(cls, code: OutcomeCode, error: str, *, retry_after: float | None = None) -> ToolOutcome:
        return cls(ok=False, content=None, code=code, error=error, retry_after=retry_after)


# progress(progress, total, message): the tool is working; the loop pushes its deadline back.
ProgressFn = Callable[[float, float | None, "str | None"], Awaitable[None]]


LinkAnswer = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class LinkRequest:
    """A tool's server asks the user to open a link (MCP URL-mode elicitation, spec 2025-11-25).

    ``wait``: the server waits for the answer (``elicitation/create``); False when the call already
    failed with "URL elicitation required" (-32042) and the link is only shown. The loop fills in
    which call it belongs to.
    """

    server: str
    message: str
    url: str
    elicitation_id: str | None = None
    wait: bool = True
    call_id: str = ""
    tool: str = ""
    round_index: int = 0


# ask_link(request) -> what the user did: "accept" (opened it), "decline", "cancel" (no answer).
AskLinkFn = Callable[[LinkRequest], Awaitable[LinkAnswer]]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Per-run facts a tool may need (never database ids of the host's own models).

    ``timeout`` is the time allowed without a sign of life; a tool that reports ``progress`` may run
    up to ``max_timeout`` in all. The loop gives each call its own context with ``progress`` and
    ``ask_link`` set; the clock stops while the user is asked.
    """

    run_key: str
    workspace: str | None = None
    timeout: float = 60.0
    max_timeout: float | None = None
    progress: ProgressFn | None = None
    ask_link: AskLinkFn | None = None


class Toolbox(Protocol):
    async def list_tools(self) -> list[ToolInfo]:
        """The tools on offer, already namespaced as the model will see them."""
        ...

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Run one validated call. Raise nothing for tool-level failures: return a failure outcome."""
        ...
