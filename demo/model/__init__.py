"""The demo model: a deterministic, scripted model speaking OpenAI Chat Completions over HTTP.

Labelled "demo model" wherever it is shown; it is never passed off as an LLM.
``script.py`` decides what to answer (pure), ``wire.py`` turns a plan into the exact chunk format of
providers.md §1.3, ``app.py`` serves it (ASGI) at a configurable token rate.
"""

from demo.model.app import DemoModelSettings, create_app

DEMO_MODEL_NAME = "clearloop-demo"

__all__ = ["DEMO_MODEL_NAME", "DemoModelSettings", "create_app"]
