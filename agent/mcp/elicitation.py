"""URL-mode elicitation (spec 2025-11-25 ``client/elicitation.mdx``): a server asks the user to open a link.

The server sends ``elicitation/create`` with ``mode: "url"`` while one of our ``tools/call`` requests
runs (or, in the 2026-07-28 era, returns it inside an ``InputRequiredResult`` that the SDK drives in
the caller's own task). The link goes to the user of the run that made the call; the call waits,
its clock stopped, until the user opens it ("accept": consent given and the URL opened by the user's
own click), declines it, or does not answer in time ("cancel"). The client never fetches the URL
("MUST NOT automatically pre-fetch the URL or any of its metadata").

Which call? In the 2026 era the callback runs in the calling task, so ``current_call`` names it.
In the 2025-11-25 era a server→client request carries no reference to the request it serves, so it
goes to the only call in flight on that session; with several (the pool shares sessions between
runs and users) nobody can tell whose it is, and it is cancelled rather than shown to the wrong
person.

Form mode needs a form UI that does not exist yet: it is declined (the SDK declares both modes
once any elicitation callback is set, python-sdk ``src/mcp/client/session.py``, ``_client_capabilities``).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp.types import ElicitRequestURLParams, ElicitResult

from agent.deadline import Deadline
from agent.toolbox import AskLinkFn, LinkRequest

log = logging.getLogger(__name__)
# "Clients SHOULD implement rate limiting" (spec, Security Considerations): a call may put at most this
# many links in front of the user; a server asking for more is declined.
MAX_LINKS_PER_CALL = 3


@dataclass(eq=False)
class CallHooks:
    """What one ``tools/call`` in flight offers a server that needs the user."""

    ask_link: AskLinkFn | None
    deadline: Deadline
    # The host bounds the user's time (LoopSettings.link_wait); this only caps the pause of our clock.
    link_wait: float = 3600.0
    asked: list[LinkRequest] = field(default_factory=list)
    # Set when this call's own request needed a person to sign in (agent/mcp/oauth.py): not sent.
    sign_in: Exception | None = None


current_call: ContextVar[CallHooks | None] = ContextVar("mcp_current_call", default=None)


def safe_link(url: str) -> bool:
    """Only http(s) URLs with a host are shown (no ``javascript:``, ``data:``, ``file:`` ...)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


async def ask_user(
    server: str, hooks: CallHooks | None, params: ElicitRequestURLParams, *, wait: bool
) -> str:
    """Show one URL elicitation to the user of ``hooks``' call; their answer, or "cancel"."""
    if hooks is None or hooks.ask_link is None:
        log.warning("MCP server %s asked for a link no call can show; cancelled", server)
        return "cancel"
    if len(hooks.asked) >= MAX_LINKS_PER_CALL:
        log.warning(
            "MCP server %s asked for more than %d links in one call: declined", server, MAX_LINKS_PER_CALL
        )
        return "decline"
    if not safe_link(params.url):
        log.warning("MCP server %s sent a link that is not http(s): declined", server)
        return "decline"
    request = LinkRequest(
        server=server, message=params.message, url=params.url, elicitation_id=params.elicitation_id, wait=wait
    )
    hooks.asked.append(request)
    if not wait:
        await hooks.ask_link(request)
        return "cancel"
    async with hooks.deadline.paused(hooks.link_wait + 5):
        return await hooks.ask_link(request)


def route(in_flight: set[CallHooks]) -> CallHooks | None:
    """The call an elicitation belongs to: the calling task's, else the only one in flight.

    A call's hooks count only while it is in flight: a context that outlived its call (a task
    started from inside one) must never carry a later link to that call's user.
    """
    hooks = current_call.get()
    if hooks is not None and hooks in in_flight:
        return hooks
    return next(iter(in_flight)) if len(in_flight) == 1 else None


async def on_elicitation(server: str, in_flight: set[CallHooks], params: Any) -> ElicitResult:
    """The SDK's ``elicitation_callback`` for one server's session."""
    if getattr(params, "mode", None) != "url":
        return ElicitResult(action="decline")
    action = await ask_user(server, route(in_flight), params, wait=True)
    answer: Literal["accept", "decline", "cancel"] = "cancel"
    if action == "accept":
        answer = "accept"
    elif action == "decline":
        answer = "decline"
    return ElicitResult(action=answer)
