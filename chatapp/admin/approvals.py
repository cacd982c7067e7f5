"""The approval queue (R-TOOL-2, R-UI-3): tool calls waiting for an admin, each with what led to it.

Nothing about a call is editable here. The change page shows the exact arguments, the definition the
model was offered (and its hash, which the approval binds to) and the conversation that led to the
call; Approve / Deny post a reason to ``decide_view``, which calls ``services.approvals.decide`` (the
same code path as ``manage.py approvals``). Only users with ``chatapp.approve_toolcall`` see the queue
or act on it; everyone else gets 403.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from chatapp.models import Message, Round, ToolCall
from chatapp.services.approvals import AlreadyDecided, ApprovalRefused, decide, may_approve, pending_ids
from chatapp.status_words import word
from chatapp.worker.context import branch_rows

EXCERPT_MESSAGES = 6
EXCERPT_CHARS = 4000  # per message; the full text is in the conversation's own admin page


class QueueFilter(admin.SimpleListFilter):
    """Status, defaulting to the calls that still wait for a decision."""

    title = gettext_lazy("status")
    parameter_name = "queue"
    default = "pending"

    def lookups(self, request, model_admin):
        return [
            ("pending", _("Pending approval")),
            ("all", _("All")),
            *((value, word(value)) for value in ToolCall.Status.values),
        ]

    def choices(self, changelist):
        current = self.value() or self.default
        for lookup, title in self.lookup_choices:
            yield {
                "selected": current == str(lookup),
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        value = self.value() or self.default
        if value == "pending":  # the approvers' calls only: the badge's count, listed
            return queryset.filter(pk__in=pending_ids())
        if value == "all":
            return queryset
        return queryset.filter(status=value)


class DecideForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("approve", gettext_lazy("Approve")), ("deny", gettext_lazy("Deny"))]
    )
    reason = forms.CharField(
        max_length=2000, strip=True, error_messages={"required": gettext_lazy("A reason is required.")}
    )


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def pretty_arguments(raw: str) -> tuple[str, bool]:
    """The arguments exactly as the model sent them, indented when they are JSON; (text, parsed)."""
    try:
        return pretty_json(json.loads(raw)), True
    except (TypeError, ValueError):
        return raw, False


def conversation_excerpt(call: ToolCall) -> list[Message]:
    """The last few messages of the conversation up to and including the run's user message, on the
    run's own branch (an edited question's other branch is not what led to this call)."""
    run = call.run
    if run.user_message_id:
        return branch_rows(run)[-EXCERPT_MESSAGES:]
    rows = Message.objects.filter(conversation_id=run.conversation_id, created_at__lte=run.created_at)
    return list(reversed(rows.order_by("-id")[:EXCERPT_MESSAGES]))


def run_rounds(call: ToolCall) -> list[dict[str, Any]]:
    """This run's rounds up to the call's: what the assistant said and which tools it asked for."""
    calls_by_round: dict[int, list[ToolCall]] = {}
    for other in call.run.tool_calls.filter(round_index__lte=call.round_index):
        calls_by_round.setdefault(other.round_index, []).append(other)
    rounds = []
    for rnd in Round.objects.filter(run_id=call.run_id, index__lte=call.round_index).order_by("index"):
        choices = (rnd.response or {}).get("choices") or [{}]
        rounds.append(
            {
                "index": rnd.index,
                "text": str(choices[0].get("text") or ""),
                "finish_reason": rnd.finish_reason,
                "calls": calls_by_round.get(rnd.index, []),
            }
        )
    return rounds


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
    # What a call is and where it stands first: on a phone (375 px) the name and the status fit on
    # screen and the rest scrolls inside the table's own box (static/css/approvals.css).
    list_display = ("id", "tool", "status", "risk", "user", "age", "decision", "server", "run_link")
    list_display_links = ("id", "tool")
    list_filter = (QueueFilter, "risk", "server")
    search_fields = ("name", "call_id", "run__conversation__owner__username")
    list_select_related = ("run__conversation__owner", "approval")
    ordering = ("created_at",)
    fields = (
        "name",
        "server",
        "call_id",
        "run_link",
        "user",
        "status",
        "risk",
        "created_at",
        "age",
        "decision",
        "attempts",
        "error_code",
        "result",
    )
    readonly_fields = fields

    # --- who ------------------------------------------------------------------------------------

    def has_module_permission(self, request: HttpRequest) -> bool:
        return may_approve(request.user)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return may_approve(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    # --- columns --------------------------------------------------------------------------------

    @admin.display(description=gettext_lazy("name"), ordering="name")
    def tool(self, obj: ToolCall) -> str:
        # A tool's name is one long identifier ("demo_tools__send_message"): break opportunities after
        # its underscores let a narrow column wrap it between its words, never inside one.
        parts = re.split(r"(?<=_)(?!_)", obj.name)
        return format_html_join(mark_safe("<wbr>"), "{}", ((part,) for part in parts))

    @admin.display(description=gettext_lazy("run"), ordering="run_id")
    def run_link(self, obj: ToolCall) -> str:
        url = reverse("admin:chatapp_run_change", args=[obj.run_id])
        label = _("run %(n)s (%(state)s)") % {"n": obj.run_id, "state": word(obj.run.status)}
        return format_html('<a href="{}">{}</a>', url, label)

    @admin.display(description=gettext_lazy("user"), ordering="run__conversation__owner__username")
    def user(self, obj: ToolCall) -> str:
        return obj.run.conversation.owner.get_username()

    @admin.display(description=gettext_lazy("age"), ordering="created_at")
    def age(self, obj: ToolCall) -> str:
        return timesince(obj.created_at, timezone.now())

    @admin.display(description=gettext_lazy("decision"))
    def decision(self, obj: ToolCall) -> str:
        approval = getattr(obj, "approval", None)
        if approval is None:
            return "-"
        return _("%(decision)s by %(who)s: %(reason)s") % {
            "decision": word(approval.decision),
            "who": approval.decided_by.get_username(),
            "reason": approval.reason,
        }

    # --- the review page ------------------------------------------------------------------------

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        call = get_object_or_404(
            ToolCall.objects.select_related("run__conversation__owner"), pk=_int_or_404(object_id)
        )
        if not self.has_view_permission(request, call):
            raise PermissionDenied
        arguments, parsed = pretty_arguments(call.arguments)
        approval = getattr(call, "approval", None)  # the reverse one-to-one raises AttributeError
        pending = call.status == ToolCall.Status.AWAITING_APPROVAL and approval is None
        context = {
            "call": call,
            "arguments_pretty": arguments,
            "arguments_parsed": parsed,
            "definition_pretty": pretty_json(call.definition) if call.definition else "",
            "excerpt": [
                {"message": m, "text": m.content[:EXCERPT_CHARS], "cut": len(m.content) > EXCERPT_CHARS}
                for m in conversation_excerpt(call)
            ],
            "rounds": run_rounds(call),
            "approval": approval,
            "can_decide": pending,
            "own_call": call.run.conversation.owner_id == request.user.pk,
            "decide_url": reverse("admin:chatapp_toolcall_decide", args=[call.pk]),
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, extra_context=context)

    def decide_view(self, request: HttpRequest, object_id: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not may_approve(request.user):
            raise PermissionDenied
        call = get_object_or_404(ToolCall, pk=object_id)
        back = reverse("admin:chatapp_toolcall_change", args=[call.pk])
        form = DecideForm(request.POST)
        if not form.is_valid():
            for errors in form.errors.values():
                for error in errors:
                    messages.error(request, _("Nothing was decided: %(error)s") % {"error": error})
            return HttpResponseRedirect(back)
        approve = form.cleaned_data["decision"] == "approve"
        try:
            decide(call.pk, request.user, approve=approve, reason=form.cleaned_data["reason"])
        except (ApprovalRefused, AlreadyDecided) as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(back)
        done = (
            _("Approved %(tool)s (call %(call)s, run %(run)s).")
            if approve
            else _("Denied %(tool)s (call %(call)s, run %(run)s).")
        )
        messages.success(request, done % {"tool": call.name, "call": call.pk, "run": call.run_id})
        return HttpResponseRedirect(reverse("admin:chatapp_toolcall_changelist"))

    def get_urls(self):
        return [
            path(
                "<int:object_id>/decide/",
                self.admin_site.admin_view(self.decide_view),
                name="chatapp_toolcall_decide",
            ),
            *super().get_urls(),
        ]


def _int_or_404(value: str) -> int:
    from django.http import Http404

    try:
        return int(value)
    except (TypeError, ValueError):
        raise Http404("No such tool call") from None
