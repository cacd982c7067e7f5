"""The height class an answer takes until the browser draws it (content-visibility, static/css/app.css):
short answers small, code by its lines, long prose tall, tool calls adding a line each."""

from __future__ import annotations

import pytest

from chatapp.views.display import drawn_height
from tests.exchanges import answered


def test_the_estimate_grows_with_what_is_drawn():
    assert drawn_height("", 0) == "s"
    assert drawn_height("Yes.", 0) == "s"
    assert drawn_height("Yes.", 6) == "m"  # a tool call's line each
    code = "Here:\n\n```python\n" + "x = 1\n" * 40 + "```\n"
    assert drawn_height(code, 0) == "l"  # 40 lines of code, ~17 px each
    prose = "\n\n".join("a sentence of some length, " * 12 for _ in range(10))
    assert drawn_height(prose, 0) == "xl"
    assert drawn_height(prose * 3, 0) == "xxl"


@pytest.mark.django_db
def test_the_class_is_on_the_answer(client, django_user_model):
    owner = django_user_model.objects.create_user("heights", password="x")
    convo, runs = answered(owner, 2, answer=lambda i: "short" if i == 0 else "```\n" + "line\n" * 60 + "```")
    client.force_login(owner)
    html = client.get(f"/c/{convo.pk}/").content.decode()
    assert f'class="msg assistant h-s" id="run-{runs[0].pk}"' in html
    assert f'class="msg assistant h-xl" id="run-{runs[1].pk}"' in html
