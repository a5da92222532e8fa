"""The item browser in a real browser at 1280 and 390 px, used with the keyboard: open it from
the project page, search, open an item, go to an item by the reference annotators quote, sort.
No horizontal overflow, no serious axe-core violation, no request leaves the server (no CDN).
Screenshots go to bench/out/pages/ (items-*.png, item-*.png)."""

from __future__ import annotations

import pytest

from annotation.models import ExternalAnnotation, ExternalCoder
from annotation.references import item_reference
from llm_judges import prompts
from llm_judges.models import Judge, JudgeResult
from tests import factories
from tests.agreement.helpers import seeded_study
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations, no_overflow

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_item_browser_by_keyboard(live_server, browser, size, context_args):
    researcher = factories.UserFactory()
    project, items, _ = seeded_study(researcher)
    judge = Judge.objects.create(
        project=project, name=factories.unique("gpt-judge"), kind="llm", model="m"
    )
    setting = prompts.get(project.task_type).setting(project.config)
    for item in items.values():
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version="v1",
            setting=setting,
            status="ok",
            answer={"sentences": [1], "none": False},
            raw='{"sentences": [1]}',
        )
    coder = ExternalCoder.objects.create(project=project, name="original-study")
    ExternalAnnotation.objects.create(
        coder=coder, item=items["c1"], answer={"sentences": [2], "none": False}
    )
    c1 = items["c1"]

    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    outside = []
    page.on(
        "request",
        lambda request: (
            outside.append(request.url)
            if not request.url.startswith((live_server.url, "data:", "about:"))
            else None
        ),
    )
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/")
        page.get_by_role("link", name="Items and answers").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/p/{project.slug}/items/")
        assert page.locator(".items-table tbody tr").count() == 4
        no_overflow(page)
        assert axe_violations(page) == []
        screenshot(page, f"items-{size}")

        # Search by keyboard: type in the search box, Enter submits the filter.
        page.get_by_label("Search").focus()
        page.keyboard.type("c1")
        page.keyboard.press("Enter")
        page.wait_for_url("**/items/?q=c1**")
        rows = page.locator(".items-table tbody tr")
        assert rows.count() == 1
        assert "0.00" in rows.first.inner_text()  # no pair of c1's answers agrees

        # Judge vs humans, sorted: choose with the keyboard, Apply by Enter.
        page.get_by_label("Search").fill("")
        page.locator("select[name=judge]").select_option(judge.name)
        page.locator("select[name=verdict]").select_option("disagrees")
        page.get_by_role("button", name="Apply").focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**verdict=disagrees**")
        shown = page.locator(".items-table tbody tr code").all_inner_texts()
        assert shown == ["c1", "c2"]  # the humans' majority is not the judge's [1] there
        no_overflow(page)
        assert axe_violations(page) == []
        screenshot(page, f"items-judge-{size}")

        # Open an item from the table with Enter.
        page.get_by_role("link", name="c1").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/items/{c1.pk}/**")
        assert page.locator(".answer-card").count() == 5  # 3 annotators, 1 external, 1 judge
        page.wait_for_selector(f".answer-card:has-text('{judge.name}')")
        page.wait_for_selector(".answer-card:has-text('ext:original-study')")
        no_overflow(page)
        assert axe_violations(page) == []
        screenshot(page, f"item-{size}")
        page.get_by_role("link", name="← Back to the items").focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**verdict=disagrees**")

        # Go to an item by the reference annotators see.
        page.get_by_label("Go to item").focus()
        page.keyboard.type(item_reference(item_id=items["c3"].pk).lower())
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/items/{items['c3'].pk}/")
        assert outside == []
    finally:
        context.close()
