"""The auditor's run filter: one form, one queryset, one plain description for the export record."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils.translation import gettext, gettext_lazy

from chatapp.blobs import references_containing
from chatapp.models import Message, Run, ToolCall
from chatapp.status_words import word


class RunFilter(forms.Form):
    user = forms.CharField(required=False, max_length=150, label=gettext_lazy("User"))
    date_from = forms.DateField(
        required=False, label=gettext_lazy("From"), widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(
        required=False, label=gettext_lazy("To"), widget=forms.DateInput(attrs={"type": "date"})
    )
    tool = forms.CharField(required=False, max_length=200, label=gettext_lazy("Tool"))
    status = forms.ChoiceField(required=False, label=gettext_lazy("Status"))
    provider = forms.ChoiceField(required=False, label=gettext_lazy("Provider"))
    q = forms.CharField(required=False, max_length=200, label=gettext_lazy("Text"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = Run.objects.order_by("provider_name").values_list("provider_name", flat=True).distinct()
        provider = self.fields["provider"]
        assert isinstance(provider, forms.ChoiceField)
        provider.choices = [("", gettext("any")), *((n, n) for n in names)]
        status = self.fields["status"]
        assert isinstance(status, forms.ChoiceField)
        # The states in the page's language (chatapp/status_words.py), their stored values unchanged.
        status.choices = [("", gettext("any")), *((value, word(value)) for value in Run.Status.values)]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            raise forms.ValidationError(gettext("The start date is after the end date."))
        return data

    def description(self) -> dict[str, str]:
        """The filter actually applied, for the export's audit record."""
        return {k: str(v) for k, v in self.cleaned_data.items() if v not in (None, "")}


def filtered_runs(form: RunFilter) -> QuerySet[Run]:
    """Runs matching a bound form, newest first; none at all if the filter does not validate.

    An auditor must never mistake a widened result for the one asked for, so a bad field empties
    the list (and the page shows why) rather than being ignored.
    """
    runs = Run.objects.select_related("conversation__owner", "user_message").order_by("-created_at", "-pk")
    if not form.is_valid():
        return runs.none()
    data = form.cleaned_data
    if data["user"]:
        runs = runs.filter(conversation__owner__username__iexact=data["user"].strip())
    if data["date_from"]:
        runs = runs.filter(created_at__date__gte=data["date_from"])
    if data["date_to"]:
        runs = runs.filter(created_at__date__lte=data["date_to"])
    if data["tool"]:
        runs = runs.filter(Exists(ToolCall.objects.filter(run=OuterRef("pk"), name__icontains=data["tool"])))
    if data["status"]:
        runs = runs.filter(status=data["status"])
    if data["provider"]:
        runs = runs.filter(provider_name=data["provider"])
    if data["q"]:
        runs = runs.filter(_text_match(data["q"]))
    return runs


def _text_match(text: str) -> Q:
    """Message text (the user's and the answers), the final text, and tool names and arguments."""
    # Long texts are stored once in Blob, the row's column holding a reference (blobs.py).
    large = references_containing(text)
    messages = Message.objects.filter(Q(content__icontains=text) | Q(content__in=large), run=OuterRef("pk"))
    calls = ToolCall.objects.filter(
        Q(name__icontains=text) | Q(arguments__icontains=text) | Q(arguments__in=large), run=OuterRef("pk")
    )
    return (
        Q(final_text__icontains=text)
        | Q(final_text__in=large)
        | Q(user_message__content__icontains=text)
        | Q(user_message__content__in=large)
        | Exists(messages)
        | Exists(calls)
    )
