"""The chat pages. Server-rendered; htmx swaps partials defined in ``templates/chat/page.html``."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chatapp.access import is_auditor, owned_conversation_or_404, refuse_auditors, viewable_run_or_404
from chatapp.blobs import references_containing
from chatapp.frames import kinds_for_js
from chatapp.models import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    Conversation,
    Message,
    ProviderConfig,
    Run,
    ToolLink,
)
from chatapp.services import branches, links
from chatapp.services import conversations as conversations_service
from chatapp.services.errors import ChatError, RunAlreadyActive
from chatapp.services.limits import LimitReached, model_allowed
from chatapp.services.providers import default_label, default_provider, ensure_env_providers
from chatapp.services.quotas import shown_to_user
from chatapp.services.runs import regenerate_run, request_cancel, start_run
from chatapp.services.workspace_files import list_files
from chatapp.views.charts import no_bars, usage_bars
from chatapp.views.display import Exchange, earlier_items, fresh_exchange, page_items, run_exchange
from chatapp.views.examples import examples
from chatapp.views.htmx import HtmxHttpRequest, is_htmx
from chatapp.views.toggles import save_toggles, tool_toggles

PAGE = "chat/page.html"


def frame_protocol() -> dict:
    """What ``chat.js`` must agree on with the server, rendered into the page (``json_script``): the
    frame kinds, the run statuses' labels as the page shows them, and which statuses are final."""
    return {
        "kinds": kinds_for_js(),
        # The labels are lazy (translated): read them in the page's language, as plain JSON strings.
        "labels": {value: str(label) for value, label in Run.Status.choices},
        "terminal": sorted(TERMINAL_STATUSES),
    }


def _sidebar(request: HttpRequest) -> dict:
    query = request.GET.get("q", "").strip()
    conversations = conversations_service.listed(request.user)
    if query:
        conversations = conversations.filter(
            Q(title__icontains=query)
            | Q(messages__content__icontains=query)
            | Q(messages__content__in=references_containing(query))  # long messages: blobs.py
        ).distinct()
    return {"conversations": conversations[:200], "query": query}


@login_required
@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    """The home page is the user's draft conversation, live from the start: its first message is an
    ordinary send on an open socket (the address then becomes the conversation's), not a trip to a
    new page, which cost a first message ~100 ms before its first token (docs/performance.md,
    session 25)."""
    if is_auditor(request.user) and not request.user.is_superuser:
        return redirect("audit:runs")
    if request.htmx and request.GET.get("partial") == "list":
        return render(request, f"{PAGE}#conversation-list", _sidebar(request))
    context = _conversation_context(request, conversations_service.draft_for(request.user), known_draft=True)
    deleted = request.GET.get("deleted", "")
    if deleted.isdigit():
        context["deleted"] = Conversation.objects.filter(
            pk=int(deleted), owner_id=request.user.pk, deleted_at__isnull=False
        ).first()
    return render(request, PAGE, context)


@login_required
@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    refuse_auditors(request.user)
    conversation = conversations_service.draft_for(request.user)
    return redirect("conversation", conversation_id=conversation.pk)


@login_required
@require_GET
def conversation(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    return render(request, PAGE, _conversation_context(request, convo))


def _conversation_context(request: HttpRequest, convo: Conversation, *, known_draft: bool = False) -> dict:
    """The conversation page's context. ``known_draft``: ``convo`` comes from ``draft_for`` (the home
    page), so it has no message and no file, hence no run: none of its exchanges, usage or active run
    is read (~5 ms of the home page's CPU)."""
    ensure_env_providers()
    earlier = None
    items: list[Exchange]
    if known_draft:
        items, files, chart, active, draft = [], [], no_bars(), None, True
    else:
        since = request.GET.get("since", "")
        items, earlier = page_items(convo, settings.PAGE_EXCHANGES, int(since) if since.isdigit() else None)
        files = list_files(convo)
        chart = usage_bars(convo)
        active = convo.runs.filter(status__in=ACTIVE_STATUSES).first()
        # A draft (no message, no file: "New conversation"'s) greets as the home page does and, in demo
        # mode, offers the seed scenarios; its first question hides them and shows Delete.
        draft = not items and not files and not convo.messages.exists()
    return {
        **_sidebar(request),
        "conversation": convo,
        "items": items,
        "earlier": earlier,
        "draft": draft,
        "examples": examples() if draft else (),
        "providers": ProviderConfig.objects.filter(enabled=True),
        "default_label": default_label(),
        "active_run": active,
        "chart": chart,
        "tool_toggles": tool_toggles(convo),
        "budget_lines": shown_to_user(request.user),
        "files": files,
        **upload_limits(),
        "frame_protocol": frame_protocol(),
    }


@login_required
@require_POST
def send(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id, related=("provider",))
    text = request.POST.get("message", "")
    # The list changes only if this conversation moves to the top or gets its title: re-rendering up
    # to 200 rows out of band on every send was 30 % of the send's CPU (docs/performance.md).
    on_top = conversations_service.is_on_top(request.user, convo)
    title = convo.title
    attachments = _ids(request.POST.getlist("attachment"))
    if request.POST.get("draft") and not attachments and conversations_service.is_started(convo):
        return _start_in_new_draft(request, text)
    try:
        run = start_run(convo, text, attachments=attachments)
    except ChatError as error:
        return _refused(request, error)
    changed = not on_top or convo.title != title
    response = _exchange(request, convo, run, list_changed=changed, with_files=bool(attachments))
    _push_address(request, convo, response)
    return response


def _start_in_new_draft(request: HttpRequest, text: str) -> HttpResponse:
    """The page was the user's draft (the home page) and another tab started it meanwhile: a first
    message from a draft page starts a conversation of its own, as the home page promises, instead of
    following up (or, while it answers, being refused by) the other tab's. Files uploaded on the page
    are in that conversation's workspace, so a message with attachments goes there as sent."""
    try:
        convo = conversations_service.draft_for(request.user)
        start_run(convo, text)
    except ChatError as error:
        return _refused(request, error)
    response = HttpResponse(status=204)
    response["HX-Redirect"] = reverse("conversation", args=[convo.pk])
    return response


def _push_address(request: HttpRequest, convo: Conversation, response: HttpResponse) -> None:
    """A first message sent from the home page: the address bar becomes the conversation's (htmx
    pushes it into the history), so a reload, a bookmark or Back behave as after a navigation."""
    target = reverse("conversation", args=[convo.pk])
    current = request.headers.get("HX-Current-URL", "")
    if current and urlsplit(current).path != target:
        response["HX-Push-Url"] = target


def _ids(values: list[str]) -> list[int]:
    return [int(v) for v in values if v.isdigit()][:100]


def upload_limits() -> dict:
    types = settings.UPLOAD_ALLOWED_TYPES
    return {
        "upload_max_bytes": settings.UPLOAD_MAX_BYTES,
        "upload_types": ", ".join(types),
        "upload_accept": ",".join("." + t for t in types),
    }


def _exchange(
    request: HttpRequest, convo: Conversation, run: Run, *, list_changed: bool, with_files: bool
) -> HttpResponse:
    items = [fresh_exchange(run, with_files)]
    dispatch = getattr(run, "dispatch", None)
    notice = dispatch.notice if dispatch else ""
    context = {"items": items, "conversation": convo, "fresh": True, "notice": notice}
    if list_changed:
        context.update(_sidebar(request), list_changed=True)
    # The first message names the conversation: the list and the title follow without a reload.
    return render(request, "chat/sent.html", context)


@login_required
@require_POST
def cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = viewable_run_or_404(request.user, run_id)
    owned_conversation_or_404(request.user, run.conversation_id)
    request_cancel(run)
    return HttpResponse(status=204)


@login_required
@require_POST
def answer_link(request: HttpRequest, run_id: int, link_id: int, action: str) -> HttpResponse:
    """The run's user opened (accept) or declined a link a tool's server asked them to open."""
    run = viewable_run_or_404(request.user, run_id)
    owned_conversation_or_404(request.user, run.conversation_id)
    link = get_object_or_404(ToolLink, pk=link_id, run=run)
    try:
        answered = links.answer_link(link, request.user, action)
    except links.LinkAnswerError as error:
        return HttpResponse(str(error), status=400)
    return HttpResponse(status=204 if answered else 409)


def _to_conversation(request: HttpRequest, convo: Conversation) -> HttpResponse:
    """After a change of branch the whole exchange list changes: htmx reloads the page."""
    if is_htmx(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = reverse("conversation", args=[convo.pk])
        return response
    return redirect("conversation", conversation_id=convo.pk)


def _refused(request: HttpRequest, error: ChatError) -> HttpResponse:
    """A refused send: the reason goes under the message box, and what the user typed stays there.

    htmx 2 swaps no 4xx by default; base.html's ``responseHandling`` swaps 409/422/429 (still as
    errors, so chat.js does not clear the box) into the target named here.
    """
    status = 429 if isinstance(error, LimitReached) else 409 if isinstance(error, RunAlreadyActive) else 422
    response = render(request, f"{PAGE}#send-error", {"error": str(error)}, status=status)
    response["HX-Retarget"] = "#send-error"
    response["HX-Reswap"] = "outerHTML"
    return response


@login_required
@require_POST
def regenerate(request: HttpRequest, run_id: int) -> HttpResponse:
    """A sibling answer to the same question, shown in place of this one (‹ 2/2 ›)."""
    run = viewable_run_or_404(request.user, run_id)
    convo = owned_conversation_or_404(request.user, run.conversation_id)
    try:
        regenerate_run(run)
    except ChatError as error:
        return _refused(request, error)
    return _to_conversation(request, convo)


@login_required
@require_POST
def edit_message(request: HttpRequest, message_id: int) -> HttpResponse:
    """An edited question starts a new branch from the same point; the original stays on its own."""
    message = get_object_or_404(Message, pk=message_id, role=Message.Role.USER)
    convo = owned_conversation_or_404(request.user, message.conversation_id)
    try:
        start_run(convo, request.POST.get("message", ""), edit_of=message)
    except ChatError as error:
        return _refused(request, error)
    return _to_conversation(request, convo)


@login_required
@require_POST
def switch_branch(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    message_id, run_id = request.POST.get("message", ""), request.POST.get("run", "")
    try:
        branches.switch_to(
            convo,
            message_id=int(message_id) if message_id.isdigit() else None,
            run_id=int(run_id) if run_id.isdigit() else None,
        )
    except ChatError as error:
        return _refused(request, error)
    return _to_conversation(request, convo)


@login_required
@require_GET
def earlier_exchanges(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The exchanges before ``?before=<run id>`` on the page's path, with the button for those before
    them: what the conversation page brings in as the person scrolls up (``page_items``)."""
    convo = owned_conversation_or_404(request.user, conversation_id)
    before = request.GET.get("before", "")
    if not before.isdigit():
        return HttpResponse(_("Which exchange to show the earlier ones of is missing."), status=400)
    found = earlier_items(convo, int(before), settings.PAGE_EXCHANGES)
    items, earlier = found if found is not None else ([], None)
    context = {"conversation": convo, "items": items, "earlier": earlier, "changed": found is None}
    return render(request, "chat/earlier.html", context)


@login_required
@require_GET
def run_fragment(request: HttpRequest, run_id: int) -> HttpResponse:
    run: Run = viewable_run_or_404(request.user, run_id)
    items = [run_exchange(run)]
    return render(request, f"{PAGE}#exchange", {"items": items, "conversation": run.conversation})


@login_required
@require_POST
def rename(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    title = request.POST.get("title", "").strip()[:200]
    if title:
        convo.title = title
        convo.save(update_fields=["title", "updated_at"])
    return redirect("conversation", conversation_id=convo.pk)


@login_required
@require_POST
def delete(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    """Soft delete (the page asked for confirmation); the home page offers Undo."""
    convo = owned_conversation_or_404(request.user, conversation_id)
    conversations_service.delete(convo, request.user)
    target = f"{reverse('chat')}?deleted={convo.pk}"
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = target
        return response
    return redirect(target)


@login_required
@require_POST
def restore(request: HttpRequest, conversation_id: int) -> HttpResponse:
    refuse_auditors(request.user)
    try:
        convo = conversations_service.restore(request.user, conversation_id)
    except ChatError as error:
        return HttpResponse(str(error), status=410, content_type="text/plain; charset=utf-8")
    return redirect("conversation", conversation_id=convo.pk)


@login_required
@require_POST
def conversation_settings(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = owned_conversation_or_404(request.user, conversation_id)
    provider_name = request.POST.get("provider", "")
    provider = ProviderConfig.objects.filter(name=provider_name, enabled=True).first()
    if provider_name and provider is None:
        return _picker_status(
            request,
            convo,
            error=_("No enabled model named %(name)r; nothing changed.") % {"name": provider_name},
        )
    convo.provider = provider
    model = request.POST.get("model", "").strip()[:120]
    try:
        chosen = provider or default_provider()
    except ChatError as error:
        return _picker_status(request, convo, error=str(error))
    if model and not model_allowed(chosen, model):
        refused = _("The model %(model)r is not offered by %(provider)s; the setting was not changed.") % {
            "model": model,
            "provider": chosen,
        }
        return _picker_status(request, convo, error=refused)
    convo.model_override = model
    save_toggles(convo, request.POST)
    convo.save(update_fields=["provider", "model_override", "tool_settings", "updated_at"])
    return _picker_status(request, convo, saved=f"{chosen} · {model or chosen.model}")


def _picker_status(
    request: HttpRequest, convo: Conversation, *, saved: str = "", error: str = ""
) -> HttpResponse:
    """The model menu applies on change (htmx): the answer is one line beside it, saved or why not."""
    if not is_htmx(request):
        return redirect("conversation", conversation_id=convo.pk)
    context = {"picker_saved": saved, "picker_error": error}
    return render(request, f"{PAGE}#picker-status", context, status=422 if error else 200)
