"""The review list's pager at 1280 and 390 px (found looking at the page): its links sat on the
table's last line (the pager's style was in the item browser's stylesheet only) and "First
page" was a bare link a finger could hardly hit. Both are buttons now, apart from the table, at
least 44 px tall on the phone; nothing overflows, no serious axe-core violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import review
from tests import factories
from tests.agreement.helpers import answer
from tests.e2e.conftest import login
from tests.e2e.pages import MIN_TARGET, PHONE, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


def disputed_project(count: int):
    project = factories.ProjectFactory(annotators_per_item=2)
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    one, other = factories.UserFactory(), factories.UserFactory()
    for user in (one, other):
        factories.MembershipFactory(project=project, user=user, role="annotator")
    for item in factories.make_items(project, count):
        answer(item, one, [0])
        answer(item, other, [1])
    return project, researcher


def check_pager(page, size: str, name: str) -> None:
    table = page.locator("#review-items").bounding_box()
    links = page.locator("nav.pager a")
    assert links.count() >= 1
    for link in links.all():
        box = link.bounding_box()
        assert box["y"] >= table["y"] + table["height"] + 8, "the pager sits on the table"
        if size == "390":
            assert box["height"] >= MIN_TARGET - 0.5, f"{link.inner_text()} is {box} high"
    no_overflow(page)
    assert axe_violations(page) == []
    screenshot(page, name)


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_the_review_lists_pager(live_server, browser, monkeypatch, size, context_args):
    monkeypatch.setattr(review, "REVIEW_PAGE", 4)
    project, researcher = disputed_project(10)
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/review/")
        expect(page.locator("nav.pager a")).to_have_text(["Next disputed items"])
        page.locator("nav.pager a").scroll_into_view_if_needed()
        check_pager(page, size, f"review-pager-{size}")
        page.locator("nav.pager a[rel=next]").click()
        expect(page.locator("nav.pager a")).to_have_text(["First page", "Next disputed items"])
        check_pager(page, size, f"review-pager-2-{size}")
    finally:
        context.close()
