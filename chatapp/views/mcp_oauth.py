"""MCP OAuth sign-in (issue 13 item 4): start a sign-in (the admin for "one connection for everyone",
a user for "each user signs in") and the authorization server's callback.

The state of every sign-in a browser started is kept in its session, so a callback is accepted only
from the browser that began it (a forged or replayed ``state`` reaches no sign-in).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chatapp.audit.log import record
from chatapp.models import McpServer
from chatapp.services import mcp_oauth

SESSION_KEY = "mcp_oauth_states"


def _next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or ""
    if url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback


@login_required
@require_POST
def sign_in(request: HttpRequest, server_id: int) -> HttpResponse:
    server = get_object_or_404(McpServer, pk=server_id, enabled=True)
    if server.auth_mode == McpServer.AuthMode.SHARED:
        if not request.user.has_perm("chatapp.change_mcpserver"):
            raise PermissionDenied(_("Only an admin signs in for everyone."))
        user_id = None
        fallback = reverse("admin:chatapp_mcpserver_change", args=[server.pk])
    elif server.auth_mode == McpServer.AuthMode.PER_USER:
        user_id = request.user.pk
        fallback = reverse("chat")
    else:
        raise PermissionDenied(_("This server does not use OAuth."))
    back = _next(request, fallback)
    redirect_uri = request.build_absolute_uri(reverse("mcp_oauth_callback"))
    try:
        url = mcp_oauth.start_sign_in(server, user_id, redirect_uri)
    except mcp_oauth.SignInFailed as error:
        messages.error(
            request, _("Signing in to %(name)s failed: %(error)s") % {"name": server.name, "error": error}
        )
        return redirect(back)
    if url is None:
        messages.success(request, _("Already signed in to %(name)s.") % {"name": server.name})
        return redirect(back)
    states = request.session.get(SESSION_KEY, {})
    states[mcp_oauth.state_of(url)] = {"server": server.pk, "user": user_id, "next": back}
    request.session[SESSION_KEY] = states
    # A page of ours that moves on to the consent page: a redirect from the form to another origin
    # would be blocked by CSP form-action (as for the SSO logout, chatapp/views/auth.py).
    context = {"server": server, "target": url, "host": urlsplit(url).hostname or ""}
    return render(request, "mcp/sign_in_redirect.html", context)


@login_required
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state", "")
    states = request.session.get(SESSION_KEY, {})
    pending = states.pop(state, None)
    if pending is None:
        return HttpResponse(_("This sign-in was not started from this browser, or is over."), status=400)
    request.session[SESSION_KEY] = states
    server = get_object_or_404(McpServer, pk=pending["server"])
    outcome = mcp_oauth.deliver_callback(state, request.GET.get("code", ""), request.GET.get("error", ""))
    record(
        "mcp_oauth_signed_in" if outcome == "ok" else "mcp_oauth_sign_in_failed",
        actor=request.user.get_username(),
        payload={
            "server": server.name,
            "for": "everyone" if pending["user"] is None else "self",
            "outcome": outcome,
        },
    )
    if outcome == "ok":
        messages.success(request, _("Signed in to %(name)s.") % {"name": server.name})
        mcp_oauth.resume_waiting(pending["user"])
    else:
        messages.error(
            request, _("Signing in to %(name)s failed: %(error)s") % {"name": server.name, "error": outcome}
        )
    return redirect(pending["next"])
