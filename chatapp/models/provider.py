from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


def validate_key_env(name: str) -> None:
    from chatapp.secrets import key_env_allowed

    if name and not key_env_allowed(name):
        raise ValidationError(
            gettext(
                "%(name)s is not an allowed key variable: use CLEARLOOP_KEY_<NAME> or <NAME>_API_KEY "
                "(CLEARLOOP_PROVIDER_KEY_ENV_PATTERN), so no other setting of the server can be sent out"
            ),
            code="key_env",
            params={"name": repr(name)},
        )


# Lazy: the message is read in the language of the form that shows it.
slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_\-]{0,39}$",
    _("Enter a name of lowercase letters, digits, _ and - (at most 40, starting with a letter or digit)."),
)


class ProviderConfig(models.Model):
    """A model endpoint. The API key is read from a named environment variable or stored encrypted."""

    class Kind(models.TextChoices):
        OPENAI_CHAT = "openai_chat", _("OpenAI Chat Completions (and compatible)")
        OPENAI_RESPONSES = "openai_responses", "OpenAI Responses"
        ANTHROPIC = "anthropic", "Anthropic Messages"

    class Thinking(models.TextChoices):
        DEFAULT = "", _("the provider's default")
        ON = "on", _("on")
        OFF = "off", _("off")

    name = models.CharField(_("name"), max_length=40, unique=True, validators=[slug_validator])
    label = models.CharField(_("label"), max_length=80, blank=True)
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices, default=Kind.OPENAI_CHAT)
    preset = models.CharField(
        _("preset"), max_length=20, default="openai", help_text=_("capability profile preset")
    )
    # How an environment provider's preset was chosen (OPENAI_PRESET, or guessed from the host).
    preset_origin = models.CharField(_("preset origin"), max_length=200, blank=True, editable=False)
    base_url = models.URLField(_("base url"), max_length=300)
    model = models.CharField(_("model"), max_length=120)
    allowed_models = models.TextField(
        _("allowed models"),
        blank=True,
        help_text=_("other models users may pick, one name or pattern (claude-*) a line"),
    )
    api_key_env = models.CharField(
        _("api key env"),
        max_length=80,
        blank=True,
        validators=[validate_key_env],
        help_text=_(
            "name of an environment variable matching CLEARLOOP_PROVIDER_KEY_ENV_PATTERN "
            "(default CLEARLOOP_KEY_* or *_API_KEY)"
        ),
    )
    api_key_encrypted = models.TextField(_("api key encrypted"), blank=True, editable=False)
    context_window = models.PositiveIntegerField(_("context window"), default=128_000)
    # Empty = the preset's default, which is sized for thinking models (thinking counts against it).
    max_output_tokens = models.PositiveIntegerField(_("max output tokens"), null=True, blank=True)
    extra_headers = models.JSONField(_("extra headers"), default=dict, blank=True)
    capability_overrides = models.JSONField(_("capability overrides"), default=dict, blank=True)
    extra_body = models.JSONField(_("extra body"), default=dict, blank=True)
    reasoning_effort = models.CharField(_("reasoning effort"), max_length=20, blank=True)
    thinking = models.CharField(_("thinking"), max_length=3, choices=Thinking.choices, blank=True, default="")
    thinking_budget = models.PositiveIntegerField(_("thinking budget"), null=True, blank=True)
    # Empty = the preset's default (long enough for a reasoning model's silent thinking).
    idle_timeout = models.FloatField(_("idle timeout"), null=True, blank=True)
    total_timeout = models.FloatField(_("total timeout"), null=True, blank=True)
    max_retries = models.PositiveSmallIntegerField(_("max retries"), default=2)
    enabled = models.BooleanField(_("enabled"), default=True)
    # The model "Default" means, for everyone: set by an admin on exactly one provider. Nothing
    # becomes the default by being added (an environment provider included).
    is_default = models.BooleanField(
        default=False,
        verbose_name=_("default for everyone"),
        help_text=_("the model new conversations use; setting it here takes it from the previous default"),
    )
    is_demo = models.BooleanField(_("is demo"), default=False, editable=False)

    class Meta:
        ordering = ["name"]
        verbose_name = _("provider")
        verbose_name_plural = _("providers")
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="one_default_provider"
            )
        ]

    def __str__(self) -> str:
        name = self.label or self.name
        if name == "Demo model":  # the built-in label (services.providers), shown in the UI's language
            name = gettext("Demo model")
        return gettext("%(name)s (demo model)") % {"name": name} if self.is_demo else name

    def save(self, *args, **kwargs) -> None:
        from django.db import transaction

        with transaction.atomic():
            if self.is_default:
                # One default at a time: the new one takes the flag from the old one.
                ProviderConfig.objects.filter(is_default=True).exclude(pk=self.pk).update(is_default=False)
            super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.is_default and not self.enabled:
            raise ValidationError(
                {"is_default": gettext("A disabled provider cannot be the default: enable it first.")}
            )
