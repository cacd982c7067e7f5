"""Provider configurations: the demo model, and defaults from the environment."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from chatapp.models import ProviderConfig
from chatapp.services.errors import ProviderUnavailable

DEMO_NAME = "demo"


def ensure_env_providers() -> None:
    """Create or refresh providers described by environment variables (idempotent).

    Called on every page and send, so it reads the described rows in one query and writes only what
    differs: an unconditional ``update_or_create`` was a committed write (a row lock and a WAL flush)
    on every send, and every send of every user queued on the same provider row.
    """
    described = _described_providers()
    if not described:
        return
    rows = {row.name: row for row in ProviderConfig.objects.filter(name__in=described)}
    for name, values in described.items():
        row = rows.get(name)
        if row is None:
            ProviderConfig.objects.get_or_create(name=name, defaults=values)  # a concurrent create wins
            continue
        changed = [field for field, value in values.items() if getattr(row, field) != value]
        if changed:
            for field in changed:
                setattr(row, field, values[field])
            row.save(update_fields=changed)


def _described_providers() -> dict[str, dict]:
    """The providers the environment describes, by name, with the fields it sets."""
    described: dict[str, dict] = {}
    if settings.DEMO_MODE or settings.DEBUG:
        described[DEMO_NAME] = {
            "label": "Demo model",
            "kind": ProviderConfig.Kind.OPENAI_CHAT,
            "preset": "demo",
            "base_url": str(settings.DEMO_MODEL_URL),
            "model": "clearloop-demo",
            "context_window": 32_000,
            "max_output_tokens": 2048,
            "preset_origin": "",
            "is_demo": True,
        }
    # The preset comes from OPENAI_PRESET, else it is guessed from the base URL's host; either way
    # ``preset_origin`` says which, and the admin shows it (chatapp/env_providers.py).
    if settings.OPENAI_API_KEY and settings.OPENAI_MODEL and settings.OPENAI_PROVIDER:
        described["openai"] = {
            **settings.OPENAI_PROVIDER,
            "base_url": str(settings.OPENAI_BASE_URL),
            "model": settings.OPENAI_MODEL,
            "api_key_env": "OPENAI_API_KEY",
        }
    if settings.ANTHROPIC_API_KEY and settings.ANTHROPIC_MODEL and settings.ANTHROPIC_PROVIDER:
        described["anthropic"] = {
            **settings.ANTHROPIC_PROVIDER,
            "base_url": str(settings.ANTHROPIC_BASE_URL),
            "model": settings.ANTHROPIC_MODEL,
            "api_key_env": "ANTHROPIC_API_KEY",
        }
    return described


def default_provider() -> ProviderConfig:
    """What "Default" means: the provider an admin flagged, else CLEARLOOP_DEFAULT_PROVIDER, else the
    demo model. Never whichever provider happens to exist (one added in the admin, or from the
    environment): a new provider changes nothing until someone makes it the default."""
    ensure_env_providers()
    flagged = ProviderConfig.objects.filter(is_default=True).first()
    if flagged is not None:
        if not flagged.enabled:
            raise ProviderUnavailable(
                _(
                    "The default model (%(name)s) is disabled. Choose a model in the menu above, "
                    "or ask an admin to make another provider the default."
                )
                % {"name": flagged}
            )
        return flagged
    if settings.DEFAULT_PROVIDER:
        named = ProviderConfig.objects.filter(name=settings.DEFAULT_PROVIDER, enabled=True).first()
        if named is not None:
            return named
    demo = ProviderConfig.objects.filter(enabled=True, name=DEMO_NAME).first()
    if demo is not None:
        return demo
    raise ProviderUnavailable(
        _(
            "No default model is set. Choose a model in the menu above; an admin can tick "
            "“default for everyone” on a provider (or set CLEARLOOP_DEFAULT_PROVIDER)."
        )
    )


def default_label() -> str:
    """How the model menu names its "Default" entry; never raises."""
    try:
        provider = default_provider()
    except ProviderUnavailable:
        return _("none set")
    return f"{provider} · {provider.model}"


def provider_by_name(name: str) -> ProviderConfig:
    ensure_env_providers()
    provider = ProviderConfig.objects.filter(name=name, enabled=True).first()
    if provider is None:
        raise ProviderUnavailable(_("No enabled provider named %(name)r.") % {"name": name})
    return provider
