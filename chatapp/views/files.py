"""The workspace files panel: list, preview, download one file or all as a zip, delete, upload.

Reading is for whoever may see the conversation (its owner, auditors, superusers); changing is for
the owner only. Anyone else gets a 404, as for the conversation itself.
"""

from __future__ import annotations

import mimetypes

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from chatapp.access import can_view_conversation, owned_conversation_or_404
from chatapp.markdown import render_markdown
from chatapp.models import Conversation
from chatapp.services import uploads
from chatapp.services.workspace_files import (
    FileRefused,
    delete_file,
    list_files,
    open_for_reading,
    zip_stream,
)
from chatapp.streaming import StreamedFileResponse, streaming_response

PREVIEW_BYTES = 1024 * 1024
# Shown inline only as raster images: an SVG or HTML file is never rendered by the browser from here.
INLINE_IMAGES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
TEXT_SUFFIXES = {".md", ".markdown"}


def viewable_conversation_or_404(user, conversation_id: int) -> Conversation:
    convo = Conversation.objects.filter(pk=conversation_id).first()
    if convo is None or not can_view_conversation(user, convo):
        raise Http404("No such conversation")
    if convo.deleted_at and convo.owner_id == user.pk:
        raise Http404("No such conversation")
    return convo


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""


@login_required
@require_GET
def panel(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = viewable_conversation_or_404(request.user, conversation_id)
    context = {"conversation": convo, "files": list_files(convo)}
    return render(request, "chat/files.html#files-panel", context)


@login_required
@require_GET
def download(request: HttpRequest, conversation_id: int, path: str) -> HttpResponseBase:
    convo = viewable_conversation_or_404(request.user, conversation_id)
    try:
        handle, _, safe = open_for_reading(convo, path)
    except FileRefused as exc:
        raise Http404(str(exc)) from None
    response = StreamedFileResponse(request, handle, as_attachment=True, filename=safe.parts[-1])
    response["Content-Type"] = mimetypes.guess_type(safe.parts[-1])[0] or "application/octet-stream"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_GET
def raw_image(request: HttpRequest, conversation_id: int, path: str) -> HttpResponseBase:
    convo = viewable_conversation_or_404(request.user, conversation_id)
    kind = INLINE_IMAGES.get(_suffix(path))
    if kind is None:
        raise Http404("Only images are shown inline.")
    try:
        handle, _, _ = open_for_reading(convo, path)
    except FileRefused as exc:
        raise Http404(str(exc)) from None
    response = StreamedFileResponse(request, handle, content_type=kind)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@login_required
@require_GET
def preview(request: HttpRequest, conversation_id: int, path: str) -> HttpResponse:
    convo = viewable_conversation_or_404(request.user, conversation_id)
    try:
        handle, st, safe = open_for_reading(convo, path)
    except FileRefused as exc:
        raise Http404(str(exc)) from None
    with handle:
        data = handle.read(PREVIEW_BYTES + 1)
    context = {"conversation": convo, "path": safe.relative, "size": st.st_size, "kind": "download"}
    suffix = _suffix(safe.relative)
    if suffix in INLINE_IMAGES:
        context["kind"] = "image"
    elif len(data) <= PREVIEW_BYTES and b"\x00" not in data[:8192]:
        text = data.decode("utf-8", errors="replace")
        if suffix in TEXT_SUFFIXES:
            context.update(kind="markdown", html=mark_safe(render_markdown(text)))  # noqa: S308 - nh3
        else:
            context.update(kind="code", html=mark_safe(_highlighted(safe.relative, text)))  # noqa: S308
    return render(request, "chat/file_preview.html", context)


def _highlighted(name: str, text: str) -> str:
    """Pygments escapes everything it emits; unknown types are shown as plain (escaped) text."""
    try:
        lexer = get_lexer_for_filename(name, stripnl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False)
    return highlight(text, lexer, HtmlFormatter(cssclass="codehilite"))


@login_required
@require_GET
def download_all(request: HttpRequest, conversation_id: int) -> HttpResponseBase:
    convo = viewable_conversation_or_404(request.user, conversation_id)
    response = streaming_response(request, zip_stream(convo), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="conversation-{convo.pk}-files.zip"'
    return response


@login_required
@require_POST
def delete(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    try:
        delete_file(convo, request.POST.get("path", ""), request.user)
    except FileRefused as exc:
        return HttpResponse(str(exc), status=404, content_type="text/plain; charset=utf-8")
    return render(request, "chat/files.html#files-panel", {"conversation": convo, "files": list_files(convo)})


@login_required
@require_POST
def upload(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    return _upload_into(request, convo)


def _upload_into(request: HttpRequest, convo: Conversation) -> HttpResponse:
    files = request.FILES.getlist("file")
    if not files:
        return JsonResponse({"error": _("No file was sent.")}, status=400)
    try:
        stored = uploads.store_uploads(convo, files, request.user)
    except uploads.UploadRefused as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return JsonResponse(
        {
            "conversation": convo.pk,
            "warnings": stored.warnings,
            "files": [
                {
                    "id": u.pk,
                    "name": u.name,
                    "size": u.size,
                    "renamed": u.name != u.original_name and not u.original_name.startswith("text of "),
                }
                for u in stored.uploads
            ],
        }
    )
