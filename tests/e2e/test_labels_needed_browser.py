"""The question "How many human annotations do I need?" on the judge-validation page (issue 27,
item 4) in a real browser at 1280 and 390 px: the form is filled and sent, the labels needed with humans alone
and with the judge are shown, the SVG plot has its title and description and its table
alternative opens; a bad width is said beside the field. No horizontal overflow, no serious
axe-core violation. Screenshots go to bench/out/pages/."""

from __future__ import annotations

import pytest

from tests import factories
from tests.agreement.test_labels_needed import FIGURE, need_study
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, SCREENSHOTS, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_the_labels_needed_form_plot_and_table(live_server, browser, size, context_args):
    project = need_study()
    researcher = factories.UserFactory(username=factories.unique("researcher"))
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/agreement/judges/")
        section = page.locator("#labels-needed")
        section.scroll_into_view_if_needed()
        assert section.get_by_role("heading", name="How many human annotations do I need?")
        assert page.locator("#need-form select[name=figure]").input_value() == FIGURE
        page.get_by_label("Target width (upper − lower)").fill("0.35")
        page.get_by_role("button", name="Project").click()
        page.wait_for_selector("#need-answer")
        answer = page.inner_text("#need-answer")
        assert "Humans alone\n32 human labels" in answer
        assert "With the judge (PPI++)" in answer
        plot = page.locator("#labels-needed svg[role=img]")
        assert plot.is_visible()
        assert "Interval width against human labels" in plot.get_attribute("aria-label")
        assert plot.locator("desc").count() == 1
        page.locator("#labels-needed details summary").click()
        assert page.locator("#table-projection").is_visible()
        no_overflow(page)
        assert axe_violations(page) == []
        screenshot(page, f"labels-needed-{size}")
        section.screenshot(path=str(SCREENSHOTS / f"labels-needed-section-{size}.png"))
        # A width that is not a number: said beside the field, the page still there.
        page.get_by_label("Target width (upper − lower)").fill("wide")
        page.get_by_role("button", name="Project").click()
        error = page.locator("#width-error")
        assert "is not a number" in error.inner_text()
        assert page.get_by_label("Target width (upper − lower)").get_attribute("aria-invalid")
        no_overflow(page)
        assert axe_violations(page) == []
    finally:
        page.goto("about:blank")
        context.close()
