"""Shared set-up of the page tests: a project of any task type filled from its demo payload."""

from __future__ import annotations

import io
import json
from pathlib import Path

from annotation import task_types
from studies.services.imports import import_items
from tests import factories

# Screenshots the browser tests write (ignored by git; looked at before an issue is resolved).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "bench" / "out" / "pages"

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
MIN_TARGET = 44  # px: the height a finger needs (the .tap-target class of concord.css)


def demo_project(slug: str, *, items: int = 1, config: dict | None = None, per_item: int = 1):
    """A project of task type ``slug`` with ``items`` copies of its demo payload, a researcher and
    an annotator (both with factories.PASSWORD)."""
    task_type = task_types.get(slug)
    project = factories.ProjectFactory(
        task_type=slug,
        config=config or {},
        annotators_per_item=per_item,
        guidelines="## Guide\nRead the item, then answer.",
    )
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    payload = task_type.demo_payload()
    lines = [json.dumps({**payload, "id": f"{payload['id']}-{n}"}) for n in range(items)]
    if lines:
        import_items(project=project, stream=io.BytesIO("\n".join(lines).encode()), fmt="jsonl")
    return project, researcher, annotator


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def big_enough_for_a_finger(page, box) -> bool:
    """The 44 px rule holds on phones (concord.css's .tap-target up to 600 px wide); on a wider
    touch screen (a laptop's) controls keep their desktop size."""
    if page.viewport_size["width"] > 600:
        return bool(box)
    return bool(box) and box["height"] >= MIN_TARGET - 0.5


def tap(page, selector: str) -> None:
    """Tap a control, after checking it is big enough for a finger."""
    target = page.locator(selector).first
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    assert big_enough_for_a_finger(page, box), f"{selector} is {box} high"
    target.tap()


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


def answer_an_item_by_taps_on_a_phone(live_server, browser, slug: str, answer) -> None:
    """On a 390 px touch screen, an annotator of a ``slug`` demo project answers the first item
    with ``answer(page)`` and submits it by a tap; the page never overflows the screen."""
    from playwright.sync_api import expect

    from annotation.models import Annotation
    from tests.e2e.conftest import login

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
        answer(page)
        expect(page.locator("#submit")).to_be_enabled()
        no_overflow(page)
        tap(page, "#submit")
        page.wait_for_function(
            "document.querySelector('#position').textContent.startsWith('Item 2')"
        )
        assert Annotation.objects.filter(annotator=annotator).count() == 1
    finally:
        context.close()
