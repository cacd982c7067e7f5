"""A failed run explained in words, with the next step; the technical class stays in the trace.

The engine's error classes (``agent.providers.errors``, plus the loop's own ``BudgetExceeded`` and
the lease's ``PoisonRun``) are precise but mean nothing to a person who only wanted an answer. Each
known class gets one sentence that says what happened, where (the model server's address, the
provider's admin label) and what to do next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from chatapp.models import ProviderConfig, Run
from chatapp.stored_texts import shown


@dataclass(frozen=True, slots=True)
class Failure:
    text: str  # what happened and what to do, fit to show to the run's user
    technical: str  # "TransientUpstream: connection failed: ConnectError: ..." for the trace
    admin_url: str  # the provider's admin page ("" when unknown)


def _where(provider: ProviderConfig | None, run: Run) -> tuple[str, str]:
    if provider is None:
        return _("the model server"), f"'{run.provider_name}'"
    parts = urlsplit(provider.base_url or "")
    host = parts.netloc or provider.base_url or "?"
    return _("the model server at %(host)s") % {"host": host}, f"'{provider.name}'"


# Lazy: the sentences are read in the language of the page that shows the failure.
_CONNECTION = {
    "timed out": gettext_lazy(
        "%(server)s did not answer in time. Try again; if it keeps happening, check the provider "
        "%(name)s in the admin."
    ),
    "connect": gettext_lazy(
        "%(server)s refused the connection or could not be reached: check the provider %(name)s in "
        "the admin (is the server running?), or choose another model."
    ),
}
_SENTENCES = {
    "StalledStream": gettext_lazy(
        "%(server)s stopped sending for too long. Try again; an admin can raise the idle "
        "timeout of the provider %(name)s."
    ),
    "RateLimited": gettext_lazy("%(server)s is limiting requests (rate limit). Wait a minute and try again."),
    "QuotaExceeded": gettext_lazy(
        "The account behind the provider %(name)s has no quota or credit left. Ask an admin "
        "to top it up, or choose another model."
    ),
    "AuthenticationFailed": gettext_lazy(
        "%(server)s refused the credentials of the provider %(name)s: ask an admin to "
        "check its API key in the admin."
    ),
    "ContextTooLong": gettext_lazy(
        "This conversation is now too long for the model. Start a new conversation, or "
        "choose a model with a larger context window."
    ),
    "StreamEndedEarly": gettext_lazy(
        "The connection to %(server)s closed before the answer was complete. Try again."
    ),
    "MalformedStream": gettext_lazy(
        "%(server)s sent an answer clearloop could not read. Try again; if it keeps "
        "happening, check the provider %(name)s in the admin."
    ),
    "BadRequest": gettext_lazy(
        "%(server)s rejected the request (%(message)s). Check the provider %(name)s and its model "
        "name in the admin."
    ),
    "BudgetExceeded": gettext_lazy(
        "%(message)s. The round in progress was finished; ask an admin for a larger quota."
    ),
    "PoisonRun": gettext_lazy(
        "The run stopped the worker several times and was given up. An admin can find the "
        "details in the audit log."
    ),
}
# A rate limit whose server asked for longer than a run waits (agent/loop/runner.py): the run failed
# at once, and the person is told the wait the server asked for, not "a minute".
_RATE_LIMIT_WAIT = gettext_lazy(
    "%(server)s is limiting requests (rate limit) and asks to wait %(wait)s s before the next one. "
    "Try again after that."
)
_ASKED_WAIT = re.compile(r"the provider asks to wait (\d+(?:\.\d+)?) s before retrying")
_TRANSIENT = gettext_lazy(
    "%(server)s had a temporary problem and did not recover after retries. Try again in a moment."
)


def _sentence(run: Run, server: str, name: str) -> str:
    # The stored error is English (chatapp/stored_texts.py); the sentence quotes it in the page's language.
    cls, stored = run.error_class, (run.error or "").strip()
    message = shown(stored)
    template = _SENTENCES.get(cls)
    asked = _ASKED_WAIT.search(stored) if cls == "RateLimited" else None
    if asked:
        template = _RATE_LIMIT_WAIT
    if cls == "TransientUpstream":
        lowered = stored.lower()
        template = next((t for key, t in _CONNECTION.items() if key in lowered), None) or _TRANSIENT
    if template is None:
        return _("The run failed: %(reason)s.") % {"reason": message or cls}
    wait = asked.group(1) if asked else ""
    text = str(template) % {"server": server, "name": name, "message": message.rstrip(".。"), "wait": wait}
    return text[0].upper() + text[1:]


def explain(run: Run) -> Failure:
    provider = ProviderConfig.objects.filter(name=run.provider_name).first()
    server, name = _where(provider, run)
    # The class is a name and stays; a stored English text clearloop wrote (a budget stop, a fixed
    # engine failure) is shown in the page's language, what an upstream sent stays as it sent it.
    detail = shown((run.error or "").strip())
    technical = f"{run.error_class}: {detail}" if run.error_class else detail
    admin_url = f"/admin/chatapp/providerconfig/{provider.pk}/change/" if provider else ""
    return Failure(text=_sentence(run, server, name), technical=technical, admin_url=admin_url)
