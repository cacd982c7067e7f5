from __future__ import annotations

from django.db import models

from chatapp.models.provider import slug_validator


class McpServer(models.Model):
    class Transport(models.TextChoices):
        STDIO = "stdio"
        HTTP = "http", "Streamable HTTP"
        SSE = "sse", "HTTP+SSE (legacy)"

    name = models.CharField(
        max_length=40, unique=True, validators=[slug_validator], help_text="also the namespace"
    )
    transport = models.CharField(max_length=10, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(max_length=300, blank=True)
    args = models.JSONField(default=list, blank=True, help_text="an array; never run through a shell")
    env = models.JSONField(default=dict, blank=True)
    url = models.URLField(max_length=300, blank=True)
    headers = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    connect_timeout = models.FloatField(default=15.0)
    call_timeout = models.FloatField(default=60.0)
    gateway = models.BooleanField(default=False, help_text="expose as one mcp_call_tool")
    trusted = models.BooleanField(default=False, help_text="trust the server's tool annotations")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
