"""OAuth grants for HTTP MCP servers (issue 13 item 4): tokens and client registration, encrypted.

One row per (server, user); ``user`` is empty for a server whose admin chose "one connection for
everyone". Both JSON documents (``OAuthToken``, ``OAuthClientInformationFull``) are stored as Fernet
tokens (``chatapp.secrets``), like provider keys and MCP env/header values: the table never holds a
token in the clear.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class McpOAuthGrant(models.Model):
    class State(models.TextChoices):
        SIGNED_IN = "signed_in", "signed in"
        SIGN_IN_NEEDED = "sign_in_needed", "sign in again"

    server = models.ForeignKey("chatapp.McpServer", on_delete=models.CASCADE, related_name="grants")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    tokens_encrypted = models.TextField(blank=True, editable=False)
    client_info_encrypted = models.TextField(blank=True, editable=False)
    state = models.CharField(max_length=20, choices=State.choices, default=State.SIGN_IN_NEEDED)
    reason = models.CharField(max_length=300, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["server", "user"], name="mcp_grant_per_server_user"),
            models.UniqueConstraint(
                fields=["server"], condition=models.Q(user=None), name="mcp_grant_shared_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.server_id}:{self.user_id or 'everyone'}"
