"""Attach MCP resources to a conversation and expand MCP prompts into the message box (R-MCP-7).

The look-ups run in a worker (``chatapp.tasks.mcp_*``), which owns the MCP sessions; the view waits
a few seconds for the answer and shows a clear error when none comes.
"""

from __future__ import annotations

from celery.exceptions import TimeoutError as CeleryTimeout
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chatapp.access import owned_conversation_or_404
from chatapp.tasks import mcp_expand_prompt, mcp_list_context, mcp_read_resource

PAGE = "chat/context.html"
WAIT = 20
MAX_ATTACHED = 10


def _ask(task, *args) -> tuple[dict | None, str | None]:
    try:
        return task.delay(*args).get(timeout=WAIT), None
    except CeleryTimeout:
        return None, _("No worker answered in time; is the Celery worker running?")
    except Exception as exc:  # noqa: BLE001 - the server's error is shown to the user as it is
        return None, f"{type(exc).__name__}: {exc}"


@login_required
@require_GET
def context_menu(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    servers, error = _ask(mcp_list_context)
    return render(request, PAGE, {"conversation": convo, "servers": servers or {}, "error": error})


def _switched_off(convo, server: str) -> str | None:
    """A server the user switched off for this conversation is not read from for it either."""
    if (convo.tool_settings or {}).get("servers", {}).get(server) is False:
        return _("The MCP server %(name)r is switched off in this conversation's settings.") % {
            "name": server
        }
    return None


@login_required
@require_POST
def attach(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    server, uri = request.POST.get("server", ""), request.POST.get("uri", "")
    refused = _switched_off(convo, server)
    result, error = (None, refused) if refused else _ask(mcp_read_resource, server, uri)
    if result is not None:
        attached = [a for a in convo.attached_context if a.get("uri") != uri][-(MAX_ATTACHED - 1) :]
        convo.attached_context = [*attached, result]
        convo.save(update_fields=["attached_context", "updated_at"])
    return render(request, f"{PAGE}#attached", {"conversation": convo, "error": error})


@login_required
@require_POST
def detach(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    uri = request.POST.get("uri", "")
    convo.attached_context = [a for a in convo.attached_context if a.get("uri") != uri]
    convo.save(update_fields=["attached_context", "updated_at"])
    return render(request, f"{PAGE}#attached", {"conversation": convo})


@login_required
@require_POST
def expand_prompt(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    arguments = {k[4:]: v for k, v in request.POST.items() if k.startswith("arg:") and v}
    server = request.POST.get("server", "")
    refused = _switched_off(convo, server)
    result, error = (
        (None, refused)
        if refused
        else _ask(mcp_expand_prompt, server, request.POST.get("name", ""), arguments)
    )
    return render(request, f"{PAGE}#prompt-text", {"text": (result or {}).get("text", ""), "error": error})
