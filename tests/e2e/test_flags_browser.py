"""Flag, skip and send back in a real browser at 1280 and 390 px (issue 30, items 2 and 3): the
annotator flags an item by keyboard (the draft stays), skips one, a reviewer sends an answer back
with a note from the review page, and the annotator gets it first, with the note, and submits it
again (a new version). Every control is at least 44 px tall on the phone, nothing overflows, no
serious axe-core violation; the flag and the skip appear on the researchers' item pages."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Annotation, Assignment, ItemFlag, SendBack
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import MIN_TARGET, PHONE, demo_project, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
SLUG = "citation_recovery"
ANSWER = {"sentences": [0], "none": False, "helpfulness": 50}


def answer_by_taps(page) -> None:
    """Choose the first sentence and a helpfulness (pointer clicks: the desktop has no touch)."""
    page.locator("#cr-sentences li[data-index='0']").click()
    slider = page.locator("#cr-helpfulness")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.8, box["y"] + box["height"] / 2)


def tall_enough(page, selector: str) -> None:
    """On the phone (the .tap-target rule of concord.css holds up to 600 px)."""
    if page.viewport_size["width"] > 600:
        return
    for box in [e.bounding_box() for e in page.locator(selector).all() if e.is_visible()]:
        assert box and box["height"] >= MIN_TARGET - 0.5, f"{selector} is {box} high"


def check_page(page, name: str) -> None:
    no_overflow(page)
    assert axe_violations(page) == []
    screenshot(page, name)


def wait_for_item(page, n: int) -> None:
    page.wait_for_function(
        f"document.querySelector('#position').textContent.startsWith('Item {n}')"
    )


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_flag_skip_and_a_sent_back_answer(live_server, browser, size, context_args):
    project, researcher, annotator = demo_project(SLUG, items=4)
    project.crowd = {"allow_skip": True}
    project.save()
    # An answer given earlier, for the reviewer to send back.
    earlier = services.assignment_next(project=project, annotator=annotator)
    given, _ = services.annotation_submit(assignment=earlier, answer=ANSWER)

    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, annotator.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
        wait_for_item(page, 2)
        current = Assignment.objects.get(annotator=annotator, state="reserved")
        # Some work first: it must survive the flag.
        answer_by_taps(page)
        page.wait_for_function(
            "document.querySelector('#save-state').textContent === 'Draft saved'"
        )

        # Flag by keyboard: the toggle opens the form with the first reason focused.
        tall_enough(page, ".toolbar .button.tap-target")
        page.locator("#flag-toggle").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#flag-panel")).to_be_visible()
        page.keyboard.press("ArrowDown")  # evidence broken -> ambiguous
        page.keyboard.press("Tab")
        page.keyboard.type("Two readings of the claim")
        page.keyboard.press("Tab")
        expect(page.locator("#flag-send")).to_be_focused()
        tall_enough(page, "#flag-panel .tap-target")
        check_page(page, f"flag-form-{size}")
        page.keyboard.press("Enter")
        expect(page.locator("#banner")).to_contain_text("the researchers will look at this item")
        expect(page.locator("#flag-panel")).to_be_hidden()
        expect(page.locator("#flag-toggle")).to_be_focused()
        flag = ItemFlag.objects.get(item=current.item)
        assert (flag.reason, flag.text, flag.skipped) == (
            "ambiguous",
            "Two readings of the claim",
            False,
        )
        assert current.draft.answer  # the draft is still there
        flagged = (
            "You flagged this item (Ambiguous). The researchers have not answered yet; "
            "your work on it is kept."
        )
        expect(page.locator("#flagged-text")).to_have_text(flagged)
        check_page(page, f"flagged-{size}")
        # After a reload the page still says so (a probe's finding: no sign of the flag).
        page.reload()
        wait_for_item(page, 2)
        expect(page.locator("#flagged")).to_be_visible()
        expect(page.locator("#flagged-text")).to_have_text(flagged)
        check_page(page, f"flagged-reloaded-{size}")

        # Skip: the item goes, the next one comes.
        page.locator("#skip-toggle").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#flag-heading")).to_have_text("Skip this item")
        check_page(page, f"skip-form-{size}")
        page.locator("#flag-send").focus()
        page.keyboard.press("Enter")
        wait_for_item(page, 3)
        expect(page.locator("#banner")).to_contain_text("Item skipped")
        assert Assignment.objects.get(pk=current.pk).state == "skipped"
        check_page(page, f"skipped-{size}")

        # A reviewer (the researcher) sends the earlier answer back from the review page.
        review = context.browser.new_context(**context_args)
        reviewer = review.new_page()
        reviewer.set_default_timeout(15_000)
        login(reviewer, live_server, researcher.username, factories.PASSWORD)
        reviewer.goto(f"{live_server.url}/p/{project.slug}/review/{earlier.item_id}/")
        reviewer.locator(".send-back-open").first.focus()
        reviewer.keyboard.press("Enter")
        expect(reviewer.locator("#send-back-note")).to_be_focused()
        reviewer.keyboard.type("Sentence 2 carries the claim; please look again.")
        tall_enough(reviewer, "#send-back-form .tap-target")
        check_page(reviewer, f"send-back-{size}")
        reviewer.locator("#send-back-form button[type=submit]").click()
        expect(reviewer.locator("#review-state")).to_contain_text("Sent back to")
        assert SendBack.objects.get().note.startswith("Sentence 2 carries")
        review.close()

        # The annotator's next item is the sent-back one, with the note.
        page.locator("#submit").focus()  # the current item (3) is finished first
        answer_by_taps(page)
        page.locator("#submit").click()
        page.wait_for_function("!document.querySelector('#sent-back').hidden")
        expect(page.locator("#sent-back-note")).to_have_text(
            "Sentence 2 carries the claim; please look again."
        )
        expect(page.locator("#position")).to_contain_text("Item 1")
        check_page(page, f"sent-back-{size}")
        page.locator("#cr-sentences li[data-index='1']").click()
        page.locator("#submit").click()
        page.wait_for_function("document.querySelector('#sent-back').hidden")
        versions = list(Annotation.objects.filter(assignment=earlier).order_by("version"))
        assert [v.version for v in versions] == [1, 2] and versions[0].answer == given.answer
        assert SendBack.objects.get().answered_version == 2
    finally:
        context.close()

    # Where researchers look: the item page lists the flag and the skip.
    context = browser.new_context(**context_args)
    page = context.new_page()
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/items/?flagged=open")
        expect(page.locator(".flag-tag")).to_have_count(1)
        check_page(page, f"flagged-items-{size}")
        page.goto(f"{live_server.url}/p/{project.slug}/items/{current.item_id}/")
        expect(page.locator(".flag-entry")).to_have_count(2)
        tall_enough(page, "#flags .tap-target")
        check_page(page, f"item-flags-{size}")
    finally:
        context.close()
