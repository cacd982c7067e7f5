"""A new user starts on the home page's message box (the seed scenarios as example prompts in demo
mode); the model menu applies on change, without a Save, and says what "Default" is."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatapp.models import Conversation, ProviderConfig, Run

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"1440": {"width": 1440, "height": 900}, "375": {"width": 375, "height": 812}}


def test_an_example_prompt_starts_a_conversation_from_the_home_page(cast, demo_tools, page_for, artifacts):
    page = page_for("alice", "alice-pass", SIZES["1440"])
    page.goto("/")
    examples = page.locator(".examples button.example")
    expect(examples).to_have_count(4)
    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            page.set_viewport_size(viewport)
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=str(artifacts / f"home-{size}-{scheme}.png"))
    page.set_viewport_size(SIZES["1440"])
    examples.filter(has_text="SQL").click()
    assert page.input_value("#message") == "查询最新注册的两个用户"
    page.press("#message", "Enter")
    page.wait_for_url("**/c/*/")
    answer = page.locator("[data-role=answer]")
    expect(answer).to_be_visible(timeout=60_000)
    convo = Conversation.objects.get(owner=cast["alice"])
    assert convo.title.startswith("查询最新注册的两个用户")
    assert Run.objects.get(conversation=convo).status == "succeeded"


def test_the_model_menu_applies_on_change_and_names_the_default(cast, demo_provider, page_for, artifacts):
    ProviderConfig.objects.create(
        name="second",
        label="Second demo",
        base_url=demo_provider.base_url,
        model="clearloop-demo",
        preset="demo",
    )
    convo = Conversation.objects.create(owner=cast["alice"], title="pick")
    page = page_for("alice", "alice-pass", SIZES["1440"])
    page.goto(f"/c/{convo.pk}/")
    menu = page.locator("[data-role=model-menu]")
    expect(menu.locator("option").first).to_have_text("Default: Demo model (demo model) · clearloop-demo")
    assert page.locator(".picker button[type=submit]:visible").count() == 0  # no separate Save
    menu.select_option("second")
    expect(page.locator("#picker-status")).to_contain_text("Saved: the next answer uses Second demo")
    page.screenshot(path=str(artifacts / "model-menu-saved-1440.png"))
    page.fill("#message", "which model are you?")
    page.press("#message", "Enter")
    expect(page.locator("[data-role=answer]")).to_be_visible(timeout=60_000)
    assert Run.objects.get(conversation=convo).provider_name == "second"
