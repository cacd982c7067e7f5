"""Model providers: the API key is write-only (stored encrypted, never shown), and a test request."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.translation import gettext, gettext_lazy, gettext_noop

from agent.providers import knobs, profiles
from chatapp.admin.masking import MASK, MaskedJsonMixin
from chatapp.admin.texts import lazy_percent
from chatapp.models import ModelPrice, ProviderConfig
from chatapp.secrets import encrypt
from chatapp.services.engine_errors import engine_message
from chatapp.services.probes import ProviderCheck, check_provider

MAX_TESTED = 5  # one action never waits on more endpoints than this


class ProviderConfigForm(MaskedJsonMixin, forms.ModelForm):
    masked_fields = ("extra_headers", "extra_body")

    api_key = forms.CharField(
        label=gettext_lazy("API key"),
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=gettext_lazy(
            "Write-only: stored encrypted and never shown again. Leave blank to keep the stored "
            "key. Changing the base URL removes a stored key unless a new one is entered. Alternatively "
            "name an environment variable below (it wins when it is set)."
        ),
    )
    clear_api_key = forms.BooleanField(label=gettext_lazy("Remove the stored API key"), required=False)

    class Meta:
        model = ProviderConfig
        fields = [
            "name",
            "label",
            "kind",
            "preset",
            "base_url",
            "model",
            "allowed_models",
            "api_key",
            "clear_api_key",
            "api_key_env",
            "context_window",
            "max_output_tokens",
            "extra_headers",
            "capability_overrides",
            "extra_body",
            "reasoning_effort",
            "thinking",
            "thinking_budget",
            "idle_timeout",
            "total_timeout",
            "max_retries",
            "enabled",
            "is_default",
        ]
        help_texts = {
            "preset": lazy_percent(
                gettext_noop("capability profile: one of %(presets)s"),
                presets=", ".join(sorted(profiles.PRESETS)),
            ),
            "base_url": gettext_lazy(
                "OpenAI kinds include /v1 (https://api.openai.com/v1, http://localhost:11434/v1)"
            ),
            "extra_headers": lazy_percent(
                gettext_noop(
                    'a JSON object of strings, e.g. {"OpenAI-Organization": "org-..."}; values that '
                    "look secret are shown as %(mask)s (leave that to keep them)"
                ),
                mask=MASK,
            ),
            "capability_overrides": gettext_lazy(
                'replaces single fields of the preset, e.g. {"stream": false}'
            ),
            "max_output_tokens": gettext_lazy(
                "empty = the preset's default, sized for thinking models (thinking "
                "tokens count against this limit on every provider)"
            ),
            "extra_body": lazy_percent(
                gettext_noop(
                    'a JSON object merged into every request, e.g. {"thinking": {"type": "disabled"}}; '
                    "it may not set %(reserved)s"
                ),
                reserved=", ".join(sorted(knobs.RESERVED_KEYS)),
            ),
            "reasoning_effort": gettext_lazy(
                "empty = the provider's default; the values each preset accepts are in docs/providers.md"
            ),
            "thinking_budget": gettext_lazy(
                "tokens of thinking (Anthropic: at least 1024 and below the output limit)"
            ),
            "idle_timeout": gettext_lazy(
                "seconds without a byte before the stream counts as stalled (a stall is never "
                "retried); empty = the preset's default"
            ),
            "total_timeout": gettext_lazy("seconds for a whole request; empty = the preset's default"),
            "max_retries": gettext_lazy("retries of a failed request before any output arrived"),
        }

    def clean_extra_headers(self):
        return self._clean_masked("extra_headers")

    def clean_extra_body(self):
        value = self._clean_masked("extra_body")
        try:
            return knobs.validate_extra_body(value)
        except knobs.KnobError as exc:
            raise forms.ValidationError(engine_message(exc)) from exc

    def clean(self) -> dict:
        data: dict[str, Any] = super().clean() or {}
        for name in ("extra_headers", "capability_overrides"):
            if name in data and not isinstance(data[name], dict):
                self.add_error(name, gettext("must be a JSON object"))
        for name in ("idle_timeout", "total_timeout"):
            if data.get(name) is not None and data[name] <= 0:
                self.add_error(
                    name, gettext("must be a positive number of seconds (or empty for the default)")
                )
        kind, preset, model = data.get("kind"), data.get("preset"), data.get("model") or ""
        if kind and preset:
            try:
                capabilities = profiles.resolve(preset, model)
            except ValueError as exc:
                self.add_error("preset", engine_message(exc))
            else:
                if capabilities.kind != kind:
                    self.add_error(
                        "preset",
                        gettext("preset %(preset)s is for %(kind)s providers, not %(chosen)s")
                        % {"preset": repr(preset), "kind": capabilities.kind, "chosen": kind},
                    )
                overrides = data.get("capability_overrides")
                if isinstance(overrides, dict) and overrides:
                    try:
                        capabilities = profiles.resolve(preset, model, overrides)
                    except (ValueError, TypeError) as exc:
                        self.add_error("capability_overrides", engine_message(exc))
                self._clean_knobs(data, capabilities, preset)
        if data.get("api_key") and data.get("clear_api_key"):
            self.add_error("clear_api_key", gettext("either enter a new key or remove the stored one"))
        return data

    def _clean_knobs(self, data: dict, caps: profiles.Capabilities, preset: str) -> None:
        """Each knob the preset cannot send is refused on its own field, with the reason."""
        chosen = knobs.Knobs(
            reasoning_effort=data.get("reasoning_effort") or None,
            thinking={"on": True, "off": False}.get(data.get("thinking") or ""),
            thinking_budget=data.get("thinking_budget"),
        )
        for name in chosen.chosen():
            try:
                knobs.validate_knobs(knobs.Knobs(**{name: getattr(chosen, name)}), caps, preset)
            except knobs.KnobError as exc:
                self.add_error(name, engine_message(exc))
                return
        try:
            knobs.validate_knobs(chosen, caps, preset)
        except knobs.KnobError as exc:
            self.add_error("thinking_budget", engine_message(exc))
            return
        if caps.knob_style == "qwen" and chosen.thinking and not caps.stream:
            # DashScope: thinking "only supports incremental output" (deep-thinking guide).
            self.add_error(
                "thinking", gettext("Qwen's thinking mode needs streaming; remove the stream override")
            )
            return
        limit = data.get("max_output_tokens") or caps.default_max_output_tokens
        budget = chosen.thinking_budget
        if caps.knob_style == "anthropic" and budget and limit and budget >= limit:
            self.add_error(
                "thinking_budget",
                gettext(
                    "must be below the output limit (%(limit)s tokens): Anthropic counts thinking "
                    "against max_tokens"
                )
                % {"limit": limit},
            )

    def save(self, commit: bool = True) -> ProviderConfig:
        config = super().save(commit=False)
        if self.cleaned_data.get("api_key"):
            config.api_key_encrypted = encrypt(self.cleaned_data["api_key"])
        elif self.cleaned_data.get("clear_api_key") or "base_url" in self.changed_data:
            # A stored key is never sent to an endpoint other than the one it was entered for (M8).
            config.api_key_encrypted = ""
        if commit:
            config.save()
        return config


def report(request: HttpRequest, check: ProviderCheck) -> None:
    """A check as an admin message (escaped by the admin's template)."""
    if check.ok:
        messages.success(request, f"{check.provider}: {check.message}")
    else:
        messages.error(
            request,
            gettext("%(provider)s: the test request failed: %(message)s")
            % {"provider": check.provider, "message": check.message},
        )


class ModelPriceInline(admin.TabularInline):
    """The price table: per model, in CLEARLOOP_COST_CURRENCY per million tokens. An empty price is
    unknown, and a round that needed it shows "unknown" instead of a cost (chatapp/pricing.py)."""

    model = ModelPrice
    extra = 1
    fields = ("model", "input", "output", "cached_read", "cache_write", "reasoning")
    verbose_name = gettext_lazy("price (per million tokens; empty = unknown)")
    verbose_name_plural = gettext_lazy("Prices per million tokens (empty = unknown, never guessed)")


@admin.register(ProviderConfig)
class ProviderConfigAdmin(admin.ModelAdmin):
    form = ProviderConfigForm
    inlines = [ModelPriceInline]
    list_display = (
        "name",
        "label",
        "kind",
        "preset",
        "model",
        "base_url",
        "enabled",
        "is_default",
        "demo",
        "key_source",
    )
    list_filter = ("kind", "enabled", "is_default", "is_demo")
    search_fields = ("name", "label", "model", "base_url")
    readonly_fields = ("stored_key", "is_demo", "preset_choice")
    actions = ["send_test_request"]

    @admin.display(description=gettext_lazy("demo"))
    def demo(self, obj: ProviderConfig) -> str:
        return gettext("demo model") if obj.is_demo else ""

    @admin.display(description=gettext_lazy("API key"))
    def key_source(self, obj: ProviderConfig) -> str:
        # Where the key comes from, never any part of it.
        if obj.api_key_env:
            if obj.api_key_encrypted:
                return gettext("env %(name)s (stored key as fallback)") % {"name": obj.api_key_env}
            return gettext("env %(name)s") % {"name": obj.api_key_env}
        return gettext("stored (encrypted)") if obj.api_key_encrypted else gettext("none")

    @admin.display(description=gettext_lazy("Preset chosen by"))
    def preset_choice(self, obj: ProviderConfig) -> str:
        if obj is None or obj.pk is None:
            return gettext("the admin")
        return obj.preset_origin or gettext("the admin")

    @admin.display(description=gettext_lazy("Stored API key"))
    def stored_key(self, obj: ProviderConfig) -> str:
        return gettext("set (encrypted, not shown)") if obj and obj.api_key_encrypted else gettext("not set")

    def get_fieldsets(self, request, obj=None):
        return [
            (None, {"fields": ["name", "label", "enabled", "is_default", "is_demo"]}),
            (
                gettext_lazy("Endpoint"),
                {"fields": ["kind", "preset", "preset_choice", "base_url", "model", "allowed_models"]},
            ),
            (
                gettext_lazy("Credentials"),
                {"fields": ["stored_key", "api_key", "clear_api_key", "api_key_env"]},
            ),
            (
                gettext_lazy("Limits and capabilities"),
                {"fields": ["context_window", "max_output_tokens", "extra_headers", "capability_overrides"]},
            ),
            (gettext_lazy("Reasoning"), {"fields": ["reasoning_effort", "thinking", "thinking_budget"]}),
            (
                gettext_lazy("Request"),
                {"fields": ["extra_body", "idle_timeout", "total_timeout", "max_retries"]},
            ),
        ]

    def changelist_view(self, request: HttpRequest, extra_context=None):
        from chatapp.services.providers import default_label

        if not ProviderConfig.objects.filter(is_default=True).exists():
            self.message_user(
                request,
                gettext(
                    "No provider is ticked “default for everyone”: “Default” in the chat means "
                    "%(label)s. Open a provider and tick it to choose."
                )
                % {"label": default_label()},
                messages.WARNING,
            )
        return super().changelist_view(request, extra_context)

    @admin.action(description=gettext_lazy("Send a test request"), permissions=["change"])
    def send_test_request(self, request: HttpRequest, queryset) -> None:
        configs = list(queryset[: MAX_TESTED + 1])
        if len(configs) > MAX_TESTED:
            self.message_user(
                request,
                gettext("Testing the first %(n)s providers only.") % {"n": MAX_TESTED},
                messages.WARNING,
            )
        for config in configs[:MAX_TESTED]:
            report(request, check_provider(config))

    def get_urls(self):
        return [
            path(
                "<int:object_id>/test/",
                self.admin_site.admin_view(self.test_view),
                name="chatapp_providerconfig_test",
            ),
            *super().get_urls(),
        ]

    def test_view(self, request: HttpRequest, object_id: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        config = get_object_or_404(ProviderConfig, pk=object_id)
        if not self.has_change_permission(request, config):
            raise PermissionDenied
        report(request, check_provider(config))
        return HttpResponseRedirect(reverse("admin:chatapp_providerconfig_change", args=[config.pk]))
