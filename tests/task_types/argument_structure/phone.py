"""How an annotator answers one argument_structure demo item by taps on a phone: the routine
tests/e2e/test_phone_and_accessibility.py runs at 390 px (every control through ``tap``, which
checks it is at least 44 px tall)."""

from tests.e2e.pages import tap


def answer(page):
    # Edit mode starts from the (valid) draft: the annotator checks both stages and submits.
    tap(page, "#as-tab-2")
    tap(page, "#as-tab-1")
