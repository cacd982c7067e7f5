"""The objects a process made while starting (Django, the app's modules, the URL conf, the models)
are moved out of the garbage collector's sight once it is up.

CPython's full collection walks every tracked object, and a started worker holds hundreds of
thousands of them that live as long as the process. Measured on the worker with 200 runs at 20
tokens/s (docs/performance.md, session 14): each full collection stopped the process for 150-178 ms,
and every stream's tokens waited (the p99 of those seconds' token lag: 210-280 ms against 65-90);
with the start-up objects frozen, 18-21 ms. The garbage present at that moment is collected first, so
nothing dead is kept for good; what is made afterwards is collected as usual.
"""

from __future__ import annotations

import gc


def freeze_startup() -> None:
    """Collect once, then freeze what survives (``gc.freeze``); ``settings.GC_FREEZE`` turns it off."""
    gc.collect()
    gc.freeze()
