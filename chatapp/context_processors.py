from typing import Any

from django.http import HttpRequest

from chatapp.access import is_auditor


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"is_auditor": bool(user is not None and is_auditor(user))}
