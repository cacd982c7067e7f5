"""L3 (issue 16): /demo-llm/ is served only in demo mode; otherwise it is an ordinary 404."""

import httpx
import pytest

BODY = {"model": "clearloop-demo", "messages": [{"role": "user", "content": "hi"}]}


async def _post(app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        return await client.post("/demo-llm/v1/chat/completions", json=BODY)


@pytest.mark.django_db
async def test_demo_llm_answers_only_in_demo_mode(settings):
    from chatapp.asgi import http_app

    settings.DEMO_MODE = False
    off = await _post(http_app)
    assert off.status_code == 404 and "choices" not in off.text
    settings.DEMO_MODE = True
    on = await _post(http_app)
    assert on.status_code == 200 and on.json()["choices"][0]["message"]["content"]
