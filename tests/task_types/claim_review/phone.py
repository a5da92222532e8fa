"""How an annotator answers one claim_review demo item by taps on a phone: the routine
tests/e2e/test_phone_and_accessibility.py runs at 390 px (every control through ``tap``, which
checks it is at least 44 px tall)."""

from tests.e2e.pages import tap


def answer(page):
    tap(page, "#rv-to-verify")
    cards = page.locator("#rv-verify-list .rv-card")
    for n in range(cards.count()):
        card = f"#rv-verify-list .rv-card >> nth={n}"
        agree = page.locator(card).locator(".rv-agree")
        if agree.is_enabled():
            tap(page, f"{card} >> .rv-agree")
        else:
            tap(page, f"{card} >> .rv-disagree")
            tap(page, f"{card} >> .rv-label:enabled")
