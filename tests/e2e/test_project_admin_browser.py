"""The admin's project change page at 1280 and 390 px (found looking at it): at 1280 px its
labels, the study file's keys (crowd.max_items_per_annotator), were broken mid-word by Django's
160 px label column; the currency and Prolific codes were text areas; the flag reasons' area
hid the fourth default reason. Every label reads on one line at 1280 px, nothing overflows at
either width."""

from __future__ import annotations

import pytest

from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, no_overflow, screenshot

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
LINES = """() => [...document.querySelectorAll('#project_form .aligned label')].map(label => {
  const range = document.createRange();
  range.selectNodeContents(label);
  const tops = new Set([...range.getClientRects()].map(rect => Math.round(rect.top)));
  return [label.textContent.trim(), tops.size];
})"""


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_the_project_change_page(live_server, browser, size, context_args):
    staff = factories.UserFactory(is_staff=True, is_superuser=True)
    project = factories.ProjectFactory(name="A study with a long name to see how it wraps")
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, staff.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/admin/projects/project/{project.pk}/change/")
        labels = dict(page.evaluate(LINES))
        assert labels.get("crowd.max_items_per_annotator:") is not None
        if size == "1280":
            assert [name for name, lines in labels.items() if lines > 1] == []
        reasons = page.locator("textarea[name=crowd__flag_reasons]")
        assert reasons.evaluate("area => area.scrollHeight <= area.clientHeight")
        no_overflow(page)
        screenshot(page, f"project-admin-{size}")
    finally:
        context.close()
