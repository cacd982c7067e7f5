"""Secret-looking values of a JSON object field (headers, env) are never rendered back in a form.

A value is masked when its key names a credential (authorization, token, key, secret, password,
cookie ...) or the value looks like one (``chatapp.redaction`` patterns, known secrets). ``env:NAME``
references are not secrets and are shown. When the form comes back, a value still equal to the mask
means "keep what is stored"; a new value replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.translation import gettext

from chatapp.redaction import secret_named
from chatapp.services.mcp_config import ENV_PREFIX

MASK = "********"


def is_secret(key: str, value: Any) -> bool:
    text = str(value)
    if text.startswith(ENV_PREFIX) or not text:
        return False
    return secret_named(str(key), text)


def masked(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: MASK if is_secret(k, v) else v for k, v in (values or {}).items()}


def unmask(posted: Any, stored: Mapping[str, Any] | None, field: str) -> Any:
    """The posted object with every masked value replaced by the stored one."""
    if not isinstance(posted, dict):
        return posted
    stored = stored or {}
    out = {}
    for key, value in posted.items():
        if value == MASK:
            if key not in stored:
                raise forms.ValidationError(
                    gettext("%(field)s: enter the value of %(key)s (it is not stored yet)")
                    % {"field": field, "key": repr(key)}
                )
            value = stored[key]
        out[key] = value
    return out


class MaskedJsonMixin:
    """For a ModelForm: ``masked_fields`` are JSON objects whose secret values are never shown."""

    masked_fields: tuple[str, ...] = ()
    # Provided by the ModelForm this is mixed into.
    instance: Any
    initial: Any
    cleaned_data: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.masked_fields:
            if self.instance.pk and name in self.initial:
                self.initial[name] = masked(self.initial[name])

    def _clean_masked(self, name: str) -> Any:
        # clean_<field> runs before the form writes to the instance: it still holds what is stored.
        stored = getattr(self.instance, name, None) if self.instance.pk else None
        return unmask(self.cleaned_data.get(name), stored, name)
