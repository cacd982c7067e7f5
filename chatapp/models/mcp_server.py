from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from chatapp.models.fields import EncryptedValuesJSONField

# The engine's rule (agent/mcp/config.py): tools are exposed as server__tool, so no "__" in a name.
mcp_name_validator = RegexValidator(
    r"^(?!.*__)[a-z0-9][a-z0-9_\-]{0,31}$",
    _("Enter a name of lowercase letters, digits, _ and - (at most 32, no '__')."),
)


class McpServer(models.Model):
    class AuthMode(models.TextChoices):
        NONE = "none", _("no OAuth (static headers only)")
        SHARED = "shared", _("OAuth: one connection for everyone")
        PER_USER = "per_user", _("OAuth: each user signs in")

    class Transport(models.TextChoices):
        STDIO = "stdio"
        HTTP = "http", "Streamable HTTP"
        SSE = "sse", _("HTTP+SSE (legacy)")

    name = models.CharField(
        _("name"),
        max_length=32,
        unique=True,
        validators=[mcp_name_validator],
        help_text=_("also the namespace"),
    )
    transport = models.CharField(
        _("transport"), max_length=10, choices=Transport.choices, default=Transport.STDIO
    )
    command = models.CharField(_("command"), max_length=300, blank=True)
    args = models.JSONField(
        _("args"), default=list, blank=True, help_text=_("an array; never run through a shell")
    )
    env = EncryptedValuesJSONField(_("env"), default=dict, blank=True)
    url = models.URLField(_("url"), max_length=300, blank=True)
    headers = EncryptedValuesJSONField(_("headers"), default=dict, blank=True)
    enabled = models.BooleanField(_("enabled"), default=True)
    connect_timeout = models.FloatField(_("connect timeout"), default=15.0)
    call_timeout = models.FloatField(_("call timeout"), default=60.0)
    gateway = models.BooleanField(_("gateway"), default=False, help_text=_("expose as one mcp_call_tool"))
    trusted = models.BooleanField(
        _("trusted"), default=False, help_text=_("trust the server's tool annotations")
    )
    auth_mode = models.CharField(
        _("auth mode"),
        max_length=10,
        choices=AuthMode.choices,
        default=AuthMode.NONE,
        help_text=_(
            "OAuth 2.1 (http / sse only): one connection for everyone (an admin signs in once "
            "from this page) or each user signs in the first time a tool of this server is needed"
        ),
    )
    # OAuth servers: the tool list last seen through anyone's session (CatalogueEntry fields), so a
    # user who has not signed in yet is offered the tools and signs in when one is called.
    tools_seen = models.JSONField(_("tools seen"), default=list, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        verbose_name = _("MCP server")
        verbose_name_plural = _("MCP servers")

    def __str__(self) -> str:
        return self.name
