"""Fixing a flagged item's record in a real browser at 1280 and 390 px (issue 30, item 2): the
researcher opens the fix form by keyboard, a mistyped record comes back with the reason and the
text as typed, a correct one makes revision 2, the earlier answer is marked as made on revision 1,
and the flag is resolved. Nothing overflows; no serious axe-core violation."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotation import flags, services
from annotation.models import Item, ItemFlag
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, demo_project, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
ANSWER = {"sentences": [0], "none": False, "helpfulness": 50}


def check_page(page, name: str) -> None:
    no_overflow(page)
    assert axe_violations(page) == []
    screenshot(page, name)


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_a_flagged_item_is_fixed_and_reopened(live_server, browser, size, context_args):
    project, researcher, annotator = demo_project("citation_recovery", items=2)
    assignment = services.assignment_next(project=project, annotator=annotator)
    flags.flag_raise(assignment=assignment, reason="evidence broken", text="the link is dead")
    services.annotation_submit(assignment=assignment, answer=ANSWER)
    item = assignment.item

    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/items/{item.pk}/")
        summary = page.locator("#fix-heading + details > summary")
        summary.focus()
        page.keyboard.press("Enter")
        record = page.locator("#fix-record")
        expect(record).to_be_visible()
        check_page(page, f"item-fix-open-{size}")

        # A mistyped record: refused with the reason, the text as typed kept.
        record.fill('{"id": "' + item.external_id + '", "claim": "half typed')
        page.locator("#fix-note").fill("dead link replaced")
        page.locator("#fix-record ~ p button[type=submit]").click()
        expect(page.locator("#fix-error")).to_contain_text("not JSON")
        expect(record).to_have_value('{"id": "' + item.external_id + '", "claim": "half typed')
        expect(page.locator("#fix-note")).to_have_value("dead link replaced")
        check_page(page, f"item-fix-refused-{size}")

        payload = dict(item.payload)
        payload["claim"] = "A corrected claim."
        record.fill(json.dumps(payload, indent=2))
        page.locator("#fix-record ~ p button[type=submit]").click()
        expect(page.locator("body")).to_contain_text("Item fixed: revision 2.")
        expect(page.locator(".answer-card .tag.warn")).to_have_text(
            "made on revision 1 of the item"
        )
        assert Item.objects.get(pk=item.pk).revision == 2
        check_page(page, f"item-fixed-{size}")

        page.locator("#flags button[value=resolve]").first.click()
        expect(page.locator("body")).to_contain_text("Flag resolved.")
        assert ItemFlag.objects.get(item=item).resolved_at is not None
    finally:
        context.close()
