"""The platform-actions page in a real browser: a researcher previews approvals by keyboard,
confirms them, and the Prolific stub receives them; at 1280 px and 390 px nothing overflows and
axe-core finds nothing serious."""

from __future__ import annotations

import pytest

from tests import factories
from tests.crowd import platform_stubs as stubs
from tests.crowd.conftest import crowd_project
from tests.crowd.test_platform_actions import CROWD, add_session
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations


@pytest.fixture
def prolific(settings):
    stub = stubs.ProlificStub()
    server = stubs.serve(stub, stubs.ProlificHandler)
    settings.CONCORD_PROLIFIC_TOKEN = stubs.PROLIFIC_TOKEN
    settings.CONCORD_PROLIFIC_API_URL = f"{stub.url}/api/v1/"
    yield stub
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("size", ["1280", "390"])
def test_a_researcher_previews_and_confirms_approvals_by_keyboard(
    live_server, browser, prolific, celery_eager, size
):
    project = crowd_project(crowd=CROWD, regular=0, controls=0)
    add_session(project, "prolific", "PASS1", "sub-1")
    add_session(project, "prolific", "FAIL1", "sub-2", passed=False)
    options = PHONE if size == "390" else {"viewport": {"width": 1280, "height": 900}}
    context = browser.new_context(**options)
    page = context.new_page()
    login(page, live_server, project.researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/quality/actions/")
    # Prolific and "Approve those who passed" are the first choices; the keyboard sends the form.
    page.locator("button:has-text('Preview')").focus()
    page.keyboard.press("Enter")
    page.locator("#preview td:has-text('PASS1')").wait_for()
    assert "FAIL1" not in page.locator("#preview").inner_text()
    no_overflow(page)
    assert axe_violations(page) == []
    screenshot(page, f"crowd-actions-preview-{size}")
    assert prolific.requests == []
    page.locator("#preview button:has-text('Send 1 to prolific')").focus()
    page.keyboard.press("Enter")
    page.locator("td:has-text('Prolific accepted it')").wait_for()
    assert prolific.status == {"sub-1": "APPROVED"}
    no_overflow(page)
    screenshot(page, f"crowd-actions-ledger-{size}")
    context.close()
