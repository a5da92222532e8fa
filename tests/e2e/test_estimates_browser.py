"""The dashboard with a judge on more items than the humans (issue 27, items 1 and 2) in a real
browser at 1280 and 390 px: the tile names the humans' items and the judge's, the tables label
the judge's all-items rows, and the human-only / judge-only / prediction-powered table is there.
No horizontal overflow, no serious axe-core violation. Screenshots go to bench/out/pages/."""

from __future__ import annotations

import pytest

from llm_judges import prompts
from llm_judges.models import Judge, JudgeResult
from tests import factories
from tests.agreement import helpers
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, SCREENSHOTS, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


def a_study_with_a_wider_judge():
    researcher = factories.UserFactory(username=factories.unique("researcher"))
    project, items, _ = helpers.seeded_study(researcher)
    judge = Judge.objects.create(
        project=project, name="minilm", kind="llm", model="m", prompt_version="v1"
    )
    setting = prompts.get(project.task_type).setting(project.config)
    extra = [helpers.make_item(project, f"extra{n}", "G", n)[0] for n in range(6)]
    for item in [*items.values(), *extra]:
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version="v1",
            setting=setting,
            status=JudgeResult.Status.OK,
            answer={"sentences": [1], "none": False, "helpfulness": 50},
        )
    return project, researcher


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_the_dashboard_compares_on_shared_items_and_shows_the_estimates(
    live_server, browser, size, context_args
):
    project, researcher = a_study_with_a_wider_judge()
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/agreement/?judge=minilm")
        text = page.inner_text("main")
        assert "judge minilm: 10 items" in text
        assert "the 4 items with human answers" in text
        assert "judge's all items (minilm: 10)" in text
        estimates = page.get_by_text("Human-only, judge-only and prediction-powered estimates")
        estimates.first.scroll_into_view_if_needed()
        assert estimates.first.is_visible()
        no_overflow(page)
        assert axe_violations(page) == []
        screenshot(page, f"estimates-{size}")
        # and the estimates table as the reader sees it on the screen
        estimates.first.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"estimates-table-{size}.png"))
    finally:
        page.goto("about:blank")
        context.close()
