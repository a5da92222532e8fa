"""How an annotator answers one stance demo item by taps on a phone: the routine
tests/e2e/test_phone_and_accessibility.py runs at 390 px (every control through ``tap``, which
checks it is at least 44 px tall)."""

from tests.e2e.pages import tap


def answer(page):
    rows = page.locator(".st-row").count()
    for row in range(rows):
        tap(page, f".st-row[data-row='{row}'] .st-choice.agree")
