from __future__ import annotations

from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(autouse=True, scope="module")
def _sync_orm_beside_playwright():
    # Playwright's sync API keeps an event loop running in this thread while the module's browser is
    # open; the ORM calls of the tests (and of the database teardown) are still synchronous calls.
    import os

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path("/usr/bin/chromium").exists():
        pytest.fail("Debian's chromium is missing: `make test` installs it (scripts/system_deps.sh)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page_for(browser, live_stack):
    contexts = []

    def make(username: str, password: str, viewport: dict | None = None, **options):
        # options: more browser-context settings, e.g. bypass_csp for a test that injects axe-core
        context = browser.new_context(
            base_url=live_stack.base_url, viewport=viewport or {"width": 1280, "height": 900}, **options
        )
        contexts.append(context)
        page = context.new_page()
        page.goto("/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("[data-role=password-login] button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
