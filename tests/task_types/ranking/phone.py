"""How an annotator answers one ranking demo item by taps on a phone: the routine
tests/e2e/test_phone_and_accessibility.py runs at 390 px (every control through ``tap``, which
checks it is at least 44 px tall)."""

from tests.e2e.pages import tap


def answer(page):
    criteria = page.locator(".rk-criterion").count()
    outputs = page.locator(".rk-output-text").count()
    for c in range(criteria):
        for o in range(outputs):
            tap(page, f".rk-cell[data-criterion='{c}'][data-output='{o}'] .rk-rank[data-rank='1']")
