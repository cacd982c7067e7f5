"""Export a conversation (Markdown, JSON) and share a read-only snapshot of it by link.

Exports are for whoever may see the conversation (recorded in the audit log). Share links are made
and revoked by the owner; opening one needs a signed-in user of this instance, unless the link is
public and the administrator allows public links (``CLEARLOOP_PUBLIC_SHARE_LINKS``).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from chatapp.access import owned_conversation_or_404
from chatapp.markdown import render_markdown
from chatapp.models import ShareLink
from chatapp.services import exports
from chatapp.views.files import viewable_conversation_or_404


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def export(request: HttpRequest, conversation_id: int, fmt: str) -> HttpResponse:
    convo = viewable_conversation_or_404(request.user, conversation_id)
    if fmt not in ("md", "json"):
        raise Http404("Exports are Markdown (.md) or JSON (.json).")
    document = exports.conversation_document(convo)
    exports.record_export(convo, request.user, f"conversation-{fmt}")
    if fmt == "json":
        return _download(
            exports.as_json(document), "application/json; charset=utf-8", f"conversation-{convo.pk}.json"
        )
    return _download(
        exports.as_markdown(document), "text/markdown; charset=utf-8", f"conversation-{convo.pk}.md"
    )


@login_required
@require_GET
def share_panel(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    return render(request, "chat/share.html#share-panel", _panel(convo))


def _panel(convo, error: str = "") -> dict:
    return {
        "conversation": convo,
        "shares": convo.shares.filter(revoked_at__isnull=True),
        "public_allowed": settings.PUBLIC_SHARE_LINKS,
        "share_error": error,
    }


@login_required
@require_POST
def create_share(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    try:
        exports.create_share(convo, request.user, public=request.POST.get("public") == "on")
    except exports.ShareRefused as error:
        return render(request, "chat/share.html#share-panel", _panel(convo, str(error)), status=422)
    return render(request, "chat/share.html#share-panel", _panel(convo))


@login_required
@require_POST
def revoke_share(request: HttpRequest, conversation_id: int, share_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    link = get_object_or_404(ShareLink, pk=share_id, conversation=convo)
    exports.revoke_share(link, request.user)
    return render(request, "chat/share.html#share-panel", _panel(convo))


@require_GET
def shared(request: HttpRequest, token: str) -> HttpResponse:
    link = ShareLink.objects.filter(token=token).select_related("created_by").first()
    if link is None:
        raise Http404("No such share link")
    public = link.public and settings.PUBLIC_SHARE_LINKS
    if not public and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if link.revoked_at is not None:
        return render(request, "chat/shared.html", {"revoked": True, "link": link}, status=410)
    return render(request, "chat/shared.html", {"link": link, "exchanges": _shown(link.snapshot)})


def _shown(document: dict) -> list[dict]:
    """The branch that was on screen when the link was made, answers rendered through the sanitiser."""
    runs = {r["run_id"]: r for r in document.get("runs", [])}
    questions = {m["id"]: m for m in document.get("messages", [])}
    active = next((b for b in document.get("branches", []) if b.get("active")), None)
    order = active["run_ids"] if active else list(runs)
    out = []
    for run_id in order:
        run = runs.get(run_id)
        if run is None:
            continue
        answer = render_markdown(run.get("answer") or "")
        out.append(
            {
                "question": questions.get(run.get("user_message_id")),
                "run": run,
                "answer_html": mark_safe(answer),  # noqa: S308 - nh3-sanitised
            }
        )
    return out
