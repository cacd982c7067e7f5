"""MCP servers: edit, test the connection (and see the tools as the model will), import / export."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.text import format_lazy
from django.utils.translation import gettext, gettext_lazy, gettext_noop

from agent.mcp import McpConfigError, McpServerConfig
from chatapp.admin.masking import MASK, MaskedJsonMixin
from chatapp.admin.texts import lazy_percent
from chatapp.models import McpOAuthGrant, McpServer
from chatapp.services.engine_errors import engine_message
from chatapp.services.mcp_io import export_servers, import_servers
from chatapp.services.probes import ServerReport, probe_servers

MAX_TESTED = 10
# What an import did to each server (services.mcp_io.Imported.action).
IMPORT_ACTIONS = {
    "created": gettext_lazy("created %(name)s (%(transport)s)"),
    "updated": gettext_lazy("updated %(name)s (%(transport)s)"),
    "unchanged": gettext_lazy("unchanged %(name)s (%(transport)s)"),
}
ENV_HELP = lazy_percent(
    gettext_noop(
        'A value written "env:NAME" is read from the environment of the process that starts the server '
        "(the worker) and is never stored: keep tokens out of the database that way. Stored values that "
        "look secret are shown as %(mask)s; leave that to keep them."
    ),
    mask=MASK,
)


def _is_str_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


class McpServerForm(MaskedJsonMixin, forms.ModelForm):
    masked_fields = ("env", "headers")

    class Meta:
        model = McpServer
        fields = [
            "name",
            "transport",
            "enabled",
            "command",
            "args",
            "env",
            "url",
            "headers",
            "connect_timeout",
            "call_timeout",
            "gateway",
            "trusted",
            "auth_mode",
        ]
        help_texts = {
            "args": gettext_lazy(
                'A JSON array of strings, e.g. ["-m", "my_server", "--flag"]; never run through a shell.'
            ),
            "env": format_lazy(
                "{} {}",
                gettext_lazy(
                    'A JSON object of strings added to a stdio child\'s environment, e.g. {"API_TOKEN": '
                    '"env:MY_API_TOKEN"}.'
                ),
                ENV_HELP,
            ),
            "headers": format_lazy(
                "{} {}",
                gettext_lazy(
                    'A JSON object of HTTP headers for http / sse servers, e.g. {"Authorization": '
                    '"env:REMOTE_MCP_AUTH"}.'
                ),
                ENV_HELP,
            ),
            "name": gettext_lazy(
                "a slug (lowercase letters, digits, - and _; no __; at most 32 characters): "
                "also the namespace of the server's tools, server__tool"
            ),
        }

    def clean_env(self):
        return self._clean_masked("env")

    def clean_headers(self):
        return self._clean_masked("headers")

    def clean(self) -> dict:
        data: dict[str, Any] = super().clean() or {}
        if "args" in data and not (
            isinstance(data["args"], list) and all(isinstance(a, str) for a in data["args"])
        ):
            self.add_error("args", gettext("must be a JSON array of strings"))
        for name in ("env", "headers"):
            if name in data and not _is_str_map(data[name]):
                self.add_error(name, gettext("must be a JSON object whose values are strings"))
        if data.get("auth_mode", "none") != "none" and data.get("transport") == "stdio":
            self.add_error(
                "auth_mode", gettext("OAuth is for http / sse servers; a stdio server takes env values")
            )
        if self.errors or not data.get("name"):
            return data
        try:
            McpServerConfig(
                name=data["name"],
                transport=data.get("transport") or "stdio",
                command=data.get("command") or None,
                args=tuple(data.get("args") or ()),
                url=data.get("url") or None,
                connect_timeout=data.get("connect_timeout") or 0,
                call_timeout=data.get("call_timeout") or 0,
            )
        except McpConfigError as exc:
            raise forms.ValidationError(engine_message(exc)) from exc
        return data


class ImportForm(forms.Form):
    document = forms.CharField(
        label="mcpServers JSON",  # a format's name, the same in every language
        required=False,
        widget=forms.Textarea(attrs={"rows": 16, "cols": 90, "spellcheck": "false"}),
        help_text=gettext_lazy(
            'The "mcpServers" object of Claude Desktop, Cursor or VS Code. Servers are matched by '
            "name: new ones are created, existing ones updated."
        ),
    )
    file = forms.FileField(label=gettext_lazy("or upload a file"), required=False)

    def clean(self) -> dict:
        data: dict[str, Any] = super().clean() or {}
        upload = data.get("file")
        if upload is not None:
            try:
                data["document"] = upload.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise forms.ValidationError(gettext("the file is not UTF-8 text")) from exc
        if not (data.get("document") or "").strip():
            raise forms.ValidationError(gettext("paste a JSON document or choose a file"))
        return data


def _target(server: McpServer) -> str:
    if server.transport == McpServer.Transport.STDIO:
        return " ".join([server.command, *(str(a) for a in server.args or ())])
    return server.url


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    form = McpServerForm
    list_display = ("name", "transport", "target", "enabled", "gateway", "trusted", "call_timeout")
    list_filter = ("transport", "enabled", "gateway", "trusted")
    search_fields = ("name", "command", "url")
    actions = ["test_connection", "export_json"]
    readonly_fields = ("oauth_status",)
    fieldsets = [
        (None, {"fields": ["name", "transport", "enabled"]}),
        ("stdio", {"fields": ["command", "args", "env"]}),
        ("Streamable HTTP / SSE", {"fields": ["url", "headers", "auth_mode", "oauth_status"]}),
        (gettext_lazy("Behaviour"), {"fields": ["connect_timeout", "call_timeout", "gateway", "trusted"]}),
    ]

    @admin.display(description=gettext_lazy("OAuth sign-in"))
    def oauth_status(self, obj: McpServer | None) -> str:
        if obj is None or obj.auth_mode == McpServer.AuthMode.NONE:
            return gettext("not used")
        if obj.auth_mode == McpServer.AuthMode.PER_USER:
            grants = obj.grants.exclude(user=None)
            signed = grants.filter(state=McpOAuthGrant.State.SIGNED_IN).count()
            return gettext("each user signs in; %(signed)s signed in, %(again)s to sign in again") % {
                "signed": signed,
                "again": grants.count() - signed,
            }
        grant = obj.grants.filter(user=None).first()
        if grant is None:
            return gettext("nobody has signed in yet: use Sign in for everyone")
        if grant.state == McpOAuthGrant.State.SIGNED_IN:
            return gettext("signed in for everyone (tokens stored encrypted)")
        return gettext("sign in again: %(reason)s") % {
            "reason": grant.reason or gettext("the sign-in is no longer valid")
        }

    def change_view(self, request, object_id, form_url="", extra_context=None):
        signed_in = McpOAuthGrant.objects.filter(
            server_id=object_id, user=None, state=McpOAuthGrant.State.SIGNED_IN
        ).exists()
        extra = {**(extra_context or {}), "oauth_signed_in": signed_in}
        return super().change_view(request, object_id, form_url, extra)

    @admin.display(description=gettext_lazy("command / URL"))
    def target(self, obj: McpServer) -> str:
        return _target(obj)

    # --- test connection ---------------------------------------------------------------------

    def _render_reports(self, request: HttpRequest, reports: list[ServerReport]) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Test connection"),
            "reports": [_present(r) for r in reports],
        }
        return TemplateResponse(request, "admin/chatapp/mcpserver/test_connection.html", context)

    @admin.action(description=gettext_lazy("Test connection (and list tools)"), permissions=["change"])
    def test_connection(self, request: HttpRequest, queryset):
        servers = list(queryset[: MAX_TESTED + 1])
        if len(servers) > MAX_TESTED:
            self.message_user(
                request,
                gettext("Testing the first %(n)s servers only.") % {"n": MAX_TESTED},
                messages.WARNING,
            )
        return self._render_reports(request, probe_servers(servers[:MAX_TESTED], request.user.pk))

    def test_view(self, request: HttpRequest, object_id: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        server = get_object_or_404(McpServer, pk=object_id)
        if not self.has_change_permission(request, server):
            raise PermissionDenied
        return self._render_reports(request, probe_servers([server], request.user.pk))

    # --- export / import -----------------------------------------------------------------------

    @admin.action(description=gettext_lazy("Export selected as mcpServers JSON"))
    def export_json(self, request: HttpRequest, queryset):
        export = export_servers(queryset.order_by("name"))
        for line in export.masked:
            self.message_user(
                request, gettext("Exported as a placeholder: %(value)s") % {"value": line}, messages.INFO
            )
        for line in export.skipped:
            self.message_user(
                request, gettext("Not exported: %(reason)s") % {"reason": line}, messages.WARNING
            )
        response = HttpResponse(
            json.dumps(export.document, indent=2, ensure_ascii=False),
            content_type="application/json; charset=utf-8",
        )
        response["Content-Disposition"] = 'attachment; filename="mcpServers.json"'
        return response

    def import_view(self, request: HttpRequest):
        if not (self.has_add_permission(request) and self.has_change_permission(request)):
            raise PermissionDenied
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                done = import_servers(form.cleaned_data["document"])
            except McpConfigError as exc:
                form.add_error(
                    None, gettext("Nothing was imported: %(reason)s") % {"reason": engine_message(exc)}
                )
            else:
                if not done:
                    self.message_user(request, gettext("The document lists no servers."), messages.WARNING)
                for item in done:
                    self.message_user(
                        request,
                        IMPORT_ACTIONS.get(item.action, IMPORT_ACTIONS["updated"])
                        % {"name": item.name, "transport": item.transport},
                        messages.SUCCESS,
                    )
                return HttpResponseRedirect(reverse("admin:chatapp_mcpserver_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Import mcpServers JSON"),
            "form": form,
        }
        return TemplateResponse(
            request, "admin/chatapp/mcpserver/import.html", context, status=400 if form.errors else 200
        )

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("import/", wrap(self.import_view), name="chatapp_mcpserver_import"),
            path("<int:object_id>/test-connection/", wrap(self.test_view), name="chatapp_mcpserver_test"),
            *super().get_urls(),
        ]


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _present(report: ServerReport) -> dict:
    """A report with its JSON pre-formatted; the template escapes every string."""
    return {
        "report": report,
        "server_info": _pretty(report.server_info) if report.server_info else "",
        "tools": [
            {
                "tool": tool,
                "schema": _pretty(tool.parameters),
                "hints": _pretty(tool.hints) if tool.hints else "",
            }
            for tool in report.tools
        ],
    }
