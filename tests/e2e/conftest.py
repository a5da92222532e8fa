import os
import shutil

import pytest

from tests.conftest import require

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    require(shutil.which(CHROMIUM) is not None, "needs Debian's chromium at /usr/bin/chromium")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # between browser steps are synchronous and safe here.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def login(page, live_server, username, password):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
