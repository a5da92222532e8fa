"""How an annotator answers one questionnaire demo item by taps on a phone: the routine
tests/e2e/test_phone_and_accessibility.py runs at 390 px (every control through ``tap``, which
checks it is at least 44 px tall)."""

from tests.e2e.pages import tap


def answer(page):
    # The default questionnaire: a pairwise preference and a Likert scale (the comment is optional).
    tap(page, ".qn-question[data-question='preference'] .qn-choice")
    tap(page, ".qn-question[data-question='helpfulness'] .qn-choice")
