"""Every task type on a 390 x 844 phone (touch emulation) and under an axe-core audit.

For each task type: the page is no wider than the screen, a full item is answered and submitted
by taps on controls at least 44 px tall (the task type's routine is its
``tests/task_types/<slug>/phone.py``), and axe-core (vendored in tests/vendor, MPL-2.0) finds
no serious or critical violation on the annotator page nor on the agreement dashboard.
Screenshots at 1280 and 390 px go to bench/out/pages/ (ignored by git)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from annotation import task_types
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import (
    PHONE,
    answer_an_item_by_taps_on_a_phone,
    demo_project,
    no_overflow,
    screenshot,
)

AXE = Path(__file__).resolve().parents[1] / "vendor" / "axe-core-4.14.1" / "axe.min.js"


def phone_routine(slug: str):
    """``answer(page)`` of ``tests/task_types/<slug>/phone.py``: how an annotator answers the
    task type's demo item by taps; None when the task type has none."""
    name = f"tests.task_types.{slug}.phone"
    try:
        return importlib.import_module(name).answer
    except ModuleNotFoundError as exc:
        if exc.name in (name, f"tests.task_types.{slug}"):
            return None
        raise


SLUGS = sorted(task_types.task_type_registry.keys())


def test_every_task_type_has_a_phone_routine():
    missing = [slug for slug in SLUGS if phone_routine(slug) is None]
    assert missing == [], "add tests/task_types/<slug>/phone.py defining answer(page)"


def axe_violations(page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
             .filter((v) => v.impact === 'serious' || v.impact === 'critical')
             .map((v) => ({id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(' '))}))"""
    )
    return found


@pytest.mark.parametrize("slug", SLUGS)
def test_a_full_item_is_answered_by_taps_on_a_phone(live_server, browser, slug):
    answer = phone_routine(slug)
    if answer is None:
        pytest.fail(f"add tests/task_types/{slug}/phone.py defining answer(page)")
    answer_an_item_by_taps_on_a_phone(live_server, browser, slug, answer)


@pytest.mark.parametrize("slug", SLUGS)
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
