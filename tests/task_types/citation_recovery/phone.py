"""How an annotator answers one citation_recovery demo item by taps on a phone: the routine
tests/e2e/test_phone_and_accessibility.py runs at 390 px (every control through ``tap``, which
checks it is at least 44 px tall)."""

from tests.e2e.pages import big_enough_for_a_finger, tap


def answer(page):
    tap(page, "#cr-sentences li[data-index='0']")
    slider = page.locator("#cr-helpfulness")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    assert big_enough_for_a_finger(page, box)
    # Chromium moves a range thumb on a pointer press on its track; Playwright's synthetic touch
    # tap does not reach range inputs, so the press is sent as a pointer click at that spot.
    page.mouse.click(box["x"] + box["width"] * 0.8, box["y"] + box["height"] / 2)
