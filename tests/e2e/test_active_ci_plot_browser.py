"""The dashboard's chart of how the active estimate's interval narrowed as human answers
arrived (issue 27) in a real browser at 1280 and 390 px: an inline SVG with its title, axis
titles and description, its table of numbers in the same block, nothing loaded from elsewhere;
no horizontal overflow, the chart within the screen, no serious axe-core violation. Screenshots
go to bench/out/pages/."""

from __future__ import annotations

import pytest

from agreement.reports.estimates import ACTIVE_CI_TABLE
from tests import factories
from tests.agreement.test_active_ci_plot import active_need_study
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, SCREENSHOTS, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_the_interval_narrowing_chart(live_server, browser, size, context_args):
    project = active_need_study()
    researcher = factories.UserFactory(username=factories.unique("researcher"))
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    outside = []
    page.on(
        "request",
        lambda request: (
            outside.append(request.url)
            if not request.url.startswith(live_server.url) and not request.url.startswith("data:")
            else None
        ),
    )
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/agreement/?judge=gpt")
        block = page.locator(f"#block-{ACTIVE_CI_TABLE}")
        block.scroll_into_view_if_needed()
        chart = block.locator("svg[role=img]").first
        assert chart.is_visible()
        assert "How the interval narrowed" in chart.get_attribute("aria-label")
        assert chart.locator("desc").count() == 1
        assert "human-labelled items" in chart.inner_html()
        assert "CI width" in chart.inner_html()
        box = chart.bounding_box()
        assert box is not None and box["width"] <= page.viewport_size["width"]
        assert block.locator("table").count() == 1  # the numbers, in the same block
        # By keyboard: from the block's heading, Tab reaches the table's download link.
        link = block.get_by_role("link", name="Download CSV")
        link.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Download CSV"
        no_overflow(page)
        assert axe_violations(page) == []
        assert outside == [], outside  # no CDN, nothing from elsewhere
        screenshot(page, f"active-ci-plot-{size}")
        block.screenshot(path=str(SCREENSHOTS / f"active-ci-plot-block-{size}.png"))
    finally:
        page.goto("about:blank")
        context.close()
