from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from chatapp.models.fields import EncryptedValuesJSONField

# The engine's rule (agent/mcp/config.py): tools are exposed as server__tool, so no "__" in a name.
mcp_name_validator = RegexValidator(
    r"^(?!.*__)[a-z0-9][a-z0-9_\-]{0,31}$", "lowercase letters, digits, _ and -; at most 32; no '__'"
)


class McpServer(models.Model):
    class AuthMode(models.TextChoices):
        NONE = "none", "no OAuth (static headers only)"
        SHARED = "shared", "OAuth: one connection for everyone"
        PER_USER = "per_user", "OAuth: each user signs in"

    class Transport(models.TextChoices):
        STDIO = "stdio"
        HTTP = "http", "Streamable HTTP"
        SSE = "sse", "HTTP+SSE (legacy)"

    name = models.CharField(
        max_length=32, unique=True, validators=[mcp_name_validator], help_text="also the namespace"
    )
    transport = models.CharField(max_length=10, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(max_length=300, blank=True)
    args = models.JSONField(default=list, blank=True, help_text="an array; never run through a shell")
    env = EncryptedValuesJSONField(default=dict, blank=True)
    url = models.URLField(max_length=300, blank=True)
    headers = EncryptedValuesJSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    connect_timeout = models.FloatField(default=15.0)
    call_timeout = models.FloatField(default=60.0)
    gateway = models.BooleanField(default=False, help_text="expose as one mcp_call_tool")
    trusted = models.BooleanField(default=False, help_text="trust the server's tool annotations")
    auth_mode = models.CharField(
        max_length=10,
        choices=AuthMode.choices,
        default=AuthMode.NONE,
        help_text="OAuth 2.1 (http / sse only): one connection for everyone (an admin signs in once "
        "from this page) or each user signs in the first time a tool of this server is needed",
    )
    # OAuth servers: the tool list last seen through anyone's session (CatalogueEntry fields), so a
    # user who has not signed in yet is offered the tools and signs in when one is called.
    tools_seen = models.JSONField(default=list, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
