"""Every task type on a 390 x 844 phone (touch emulation) and under an axe-core audit.

For each task type: the page is no wider than the screen, a full item is answered and submitted
by taps on controls at least 44 px tall, and axe-core (vendored in tests/vendor, MPL-2.0) finds
no serious or critical violation on the annotator page nor on the agreement dashboard.
Screenshots at 1280 and 390 px go to bench/out/pages/ (ignored by git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation import task_types
from annotation.models import Annotation
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, demo_project, screenshot

AXE = Path(__file__).resolve().parents[1] / "vendor" / "axe-core-4.14.1" / "axe.min.js"
MIN_TARGET = 44


def tap(page, selector: str) -> None:
    """Tap a control, after checking it is big enough for a finger."""
    target = page.locator(selector).first
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    assert box and box["height"] >= MIN_TARGET - 0.5, f"{selector} is {box} high"
    target.tap()


def answer_citation_recovery(page):
    tap(page, "#cr-sentences li[data-index='0']")
    slider = page.locator("#cr-helpfulness")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    assert box["height"] >= MIN_TARGET - 0.5
    # Chromium moves a range thumb on a pointer press on its track; Playwright's synthetic touch
    # tap does not reach range inputs, so the press is sent as a pointer click at that spot.
    page.mouse.click(box["x"] + box["width"] * 0.8, box["y"] + box["height"] / 2)


def answer_stance(page):
    rows = page.locator(".st-row").count()
    for row in range(rows):
        tap(page, f".st-row[data-row='{row}'] .st-choice.agree")


def answer_ranking(page):
    criteria = page.locator(".rk-criterion").count()
    outputs = page.locator(".rk-output-text").count()
    for c in range(criteria):
        for o in range(outputs):
            tap(page, f".rk-cell[data-criterion='{c}'][data-output='{o}'] .rk-rank[data-rank='1']")


def answer_claim_review(page):
    tap(page, "#rv-to-verify")
    cards = page.locator("#rv-verify-list .rv-card")
    for n in range(cards.count()):
        card = f"#rv-verify-list .rv-card >> nth={n}"
        agree = page.locator(card).locator(".rv-agree")
        if agree.is_enabled():
            tap(page, f"{card} >> .rv-agree")
        else:
            tap(page, f"{card} >> .rv-disagree")
            tap(page, f"{card} >> .rv-label:enabled")


def answer_argument_structure(page):
    # Edit mode starts from the (valid) draft: the annotator checks both stages and submits.
    tap(page, "#as-tab-2")
    tap(page, "#as-tab-1")


def answer_questionnaire(page):
    # The default questionnaire: a pairwise preference and a Likert scale (the comment is optional).
    tap(page, ".qn-question[data-question='preference'] .qn-choice")
    tap(page, ".qn-question[data-question='helpfulness'] .qn-choice")


ANSWER = {
    "citation_recovery": answer_citation_recovery,
    "stance": answer_stance,
    "ranking": answer_ranking,
    "claim_review": answer_claim_review,
    "argument_structure": answer_argument_structure,
    "questionnaire": answer_questionnaire,
}


def test_every_task_type_has_a_phone_routine_here():
    assert set(ANSWER) == set(task_types.task_type_registry.keys())


def no_overflow(page) -> None:
    """Nothing wider than the device. Against the viewport's width, not ``innerWidth``: a mobile
    browser zooms out to fit a page that overflows, and ``innerWidth`` grows with it."""
    screen = page.viewport_size["width"]
    wide = page.evaluate(
        """(screen) => [document.documentElement.scrollWidth,
            ...[...document.querySelectorAll('body *')]
                .filter((e) => e.getBoundingClientRect().right > screen + 0.5
                    && getComputedStyle(e).position !== 'fixed'
                    && !e.closest('.table, .table-wrap, pre'))
                .slice(0, 3).map((e) => e.tagName + (e.id ? '#' + e.id : '')
                    + '.' + [...e.classList].join('.'))]""",
        screen,
    )
    assert wide[0] <= screen, f"page is {wide[0]} px wide on a {screen} px screen: {wide[1:]}"


def axe_violations(page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
             .filter((v) => v.impact === 'serious' || v.impact === 'critical')
             .map((v) => ({id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(' '))}))"""
    )
    return found


@pytest.mark.parametrize("slug", sorted(ANSWER))
def test_a_full_item_is_answered_by_taps_on_a_phone(live_server, browser, slug):
    project, _, annotator = demo_project(slug, items=2)
    context = browser.new_context(**PHONE)
    page = context.new_page()
    try:
        login(page, live_server, annotator.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
        page.wait_for_function(
            "document.querySelector('#position').textContent.startsWith('Item 1')"
        )
        no_overflow(page)
        screenshot(page, f"{slug}-390")
        ANSWER[slug](page)
        page.wait_for_timeout(300)
        assert page.locator("#submit").is_enabled(), page.locator("#validation").inner_text()
        no_overflow(page)
        tap(page, "#submit")
        page.wait_for_function(
            "document.querySelector('#position').textContent.startsWith('Item 2')"
        )
        assert Annotation.objects.filter(annotator=annotator).count() == 1
    finally:
        context.close()


@pytest.mark.parametrize("slug", sorted(ANSWER))
def test_annotator_page_and_dashboard_pass_an_axe_audit(live_server, page, slug):
    project, researcher, annotator = demo_project(slug, items=2)
    page.set_viewport_size({"width": 1280, "height": 900})
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 1')")
    screenshot(page, f"{slug}-1280")
    assert axe_violations(page) == []
    page.context.clear_cookies()
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/agreement/")
    page.wait_for_selector("#headline")
    assert axe_violations(page) == []


def test_researcher_pages_fit_a_phone(live_server, browser):
    """The researcher's pages (project, judges with every form, members, dashboard) are no wider
    than a 390 px screen: long judge names in selects and the item-kind checkboxes wrap."""
    from llm_judges.models import ModelEndpoint
    from llm_judges.services import judge_create

    project, researcher, _ = demo_project("citation_recovery", items=2)
    endpoint = ModelEndpoint.objects.create(
        name="a-model-endpoint-with-a-rather-long-name-for-a-phone (local vLLM)",
        base_url="http://127.0.0.1:9/v1",
        allow_private_network=True,
    )
    endpoint.projects.add(project)
    judge_create(
        project=project,
        name="a-judge-with-a-rather-long-name-for-a-phone (citation recovery replay)",
        kind="llm",
        model="simulated-llm-judge",
        endpoint=endpoint,
    )
    context = browser.new_context(**PHONE)
    page = context.new_page()
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        for path in ("", "judges/", "members/", "agreement/"):
            page.goto(f"{live_server.url}/p/{project.slug}/{path}")
            page.wait_for_load_state("networkidle")
            no_overflow(page)
            screenshot(page, f"researcher-{path.strip('/') or 'project'}-390")
    finally:
        context.close()
