"""Rendered markdown is kept per process (chatapp/rendered.py): opening a conversation again renders
none of its answers a second time; the HTML kept is the renderer's own, bounded in size, and nothing
is kept when the setting is 0."""

from __future__ import annotations

import threading

import pytest
from django.test import Client

from chatapp import markdown, rendered
from tests.exchanges import answered


@pytest.fixture
def renders(monkeypatch):
    """The texts the renderer actually rendered (not served from the cache), in order."""
    done: list[str] = []
    real = markdown._render

    def counting(text: str) -> str:
        done.append(text)
        return real(text)

    monkeypatch.setattr(markdown, "_render", counting)
    rendered.clear()
    yield done
    rendered.clear()


def test_a_text_is_rendered_once_and_served_the_same(renders):
    text = "# Title\n\n```python\nprint('x')\n```\n\n<script>alert(1)</script> **bold**"
    first = markdown.render_markdown(text)
    second = markdown.render_markdown(text)
    assert first == second
    assert renders == [text]
    assert "<script" not in second and "<strong>bold</strong>" in second
    markdown.render_markdown(text + " ")  # another text is another entry
    assert len(renders) == 2


@pytest.mark.django_db
def test_opening_a_conversation_again_renders_no_answer(cast, renders):
    convo, _ = answered(cast["alice"], 5, answer=lambda i: f"answer **{i}**\n\n```python\nx = {i}\n```")
    client = Client()
    client.force_login(cast["alice"])
    first = client.get(f"/c/{convo.pk}/")
    assert first.status_code == 200 and len(renders) == 5
    again = client.get(f"/c/{convo.pk}/")
    assert again.status_code == 200 and len(renders) == 5, "the second open rendered answers again"
    html = again.content.decode()
    assert all(f"answer <strong>{i}</strong>" in html for i in range(5))


def test_the_cache_holds_at_most_its_size_least_recent_out(settings, renders):
    settings.MARKDOWN_CACHE_BYTES = 8_000
    rendered._cache = None  # built again with this size
    texts = [f"paragraph {i} " + "x" * 900 for i in range(12)]  # ~1 KB of HTML each
    for text in texts:
        markdown.render_markdown(text)
    assert rendered._cache is not None and rendered._cache.currsize <= 8_000
    del renders[:]
    markdown.render_markdown(texts[-1])  # recent: kept
    markdown.render_markdown(texts[0])  # oldest: pushed out
    assert renders == [texts[0]]
    rendered._cache = None


def test_one_huge_html_is_not_kept(settings, renders):
    settings.MARKDOWN_CACHE_BYTES = 8_000
    rendered._cache = None
    small = "kept " * 10
    markdown.render_markdown(small)
    huge = "y" * 2_000  # more than an eighth of the cache
    markdown.render_markdown(huge)
    markdown.render_markdown(huge)
    markdown.render_markdown(small)
    assert renders == [small, huge, huge], "a huge HTML was kept, or it pushed the small one out"
    rendered._cache = None


def test_size_zero_keeps_nothing(settings, renders):
    settings.MARKDOWN_CACHE_BYTES = 0
    rendered._cache = None
    markdown.render_markdown("same")
    markdown.render_markdown("same")
    assert renders == ["same", "same"] and rendered._cache is None


def test_threads_rendering_at_once_get_the_same_html(renders):
    texts = [f"text {i} with `code` and a [link](https://example.com/{i})" for i in range(40)]
    expected = [markdown.render_markdown(t) for t in texts]
    rendered.clear()
    results: list[list[str]] = []

    def reader() -> None:
        results.append([markdown.render_markdown(t) for t in texts])

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and all(got == expected for got in results)
