"""The questionnaire in a real browser: every question kind answered by keyboard only and by mouse
(taps on a phone) at 1280 and 390 px; Markdown fields rendered as text nodes, side by side on a
wide screen and stacked on a phone; an item whose pairwise fields are swapped for its annotator
(counterbalancing) at both sizes, axe clean. Screenshots go to bench/out/pages/."""

import io
import json

import pytest

from annotation import ordering
from annotation.models import Annotation
from studies.services.imports import import_items
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, screenshot

from .test_questionnaire import CONFIG, RECORDS

WIDE = {"viewport": {"width": 1280, "height": 900}}
SIZES = {"1280": WIDE, "390": PHONE}
EXPECTED = {
    "topic": "money",
    "issues": ["wrong", "vague"],
    "helpful": 3,
    "why": "Clear enough",
    "better": 0,
}


@pytest.fixture
def annotate(live_server, browser):
    contexts = []

    def open_page(size: str, *, flipped: bool = False):
        project = factories.ProjectFactory(
            task_type="questionnaire", config=CONFIG, annotators_per_item=1
        )
        annotator = factories.UserFactory()
        # The seed decides whether the first item shows the pair swapped (ordering.flipped).
        seed = next(s for s in range(10) if ordering.flipped(s, 1) == flipped)
        factories.MembershipFactory(
            project=project, user=annotator, role="annotator", order_seed=seed
        )
        body = "".join(json.dumps(r) + "\n" for r in RECORDS[:2]).encode()
        import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
        context = browser.new_context(**SIZES[size])
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        login(page, live_server, annotator.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
        page.wait_for_function(
            "document.querySelector('#position').textContent.startsWith('Item 1')"
        )
        page.wait_for_selector(".qn-question")
        return page, annotator

    yield open_page
    for context in contexts:
        context.close()


def current(page) -> str:
    return page.locator(".qn-question.current").get_attribute("data-question")


def submitted_answer(page, annotator) -> dict:
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    return Annotation.objects.get(annotator=annotator, item__external_id="r1").answer


def no_overflow(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"page is {width[0]} px wide on a {width[1]} px screen"


@pytest.mark.parametrize("size", ["1280", "390"])
def test_every_question_kind_is_answered_by_keyboard_only(annotate, size):
    page, annotator = annotate(size)
    keyboard = page.keyboard
    assert current(page) == "topic"
    assert page.locator("#submit").is_disabled()
    keyboard.press("2")  # single choice: the second option, then on to the next question
    assert current(page) == "issues"
    keyboard.press("1")  # multiple choice: digits toggle, the question stays
    keyboard.press("3")
    keyboard.press("2")
    keyboard.press("3")  # off again
    assert current(page) == "issues"
    keyboard.press("ArrowDown")
    keyboard.press("3")  # Likert: the third point, on to the slider
    assert current(page) == "sure"
    assert (
        page.locator("#validation").inner_text() == "Answer question 4 (move the slider): How sure?"
    )
    keyboard.press("ArrowRight")  # an untouched slider starts from the middle: 51
    keyboard.press("Shift+ArrowRight")  # 61
    keyboard.press("ArrowLeft")  # 60
    keyboard.press("End")
    keyboard.press("Shift+ArrowLeft")  # 90
    assert page.locator(".qn-slider-value").inner_text() == "90"
    keyboard.press("ArrowDown")  # free text: the cursor goes into the box
    assert current(page) == "why"
    keyboard.type("Clear enough")
    keyboard.press("Escape")  # back to the question keys
    keyboard.press("ArrowDown")
    assert current(page) == "better"
    keyboard.press("b")
    keyboard.press("t")  # pairwise: tie
    assert page.locator("#validation").inner_text() == "Ready to submit."
    no_overflow(page)
    screenshot(page, f"questionnaire-keyboard-{size}")
    keyboard.press("Enter")
    assert submitted_answer(page, annotator) == {**EXPECTED, "sure": 90}


def tap_or_click(page, locator, size: str) -> None:
    locator.scroll_into_view_if_needed()
    if size == "390":
        box = locator.bounding_box()
        assert box and box["height"] >= 43.5, f"{locator} is {box} high"
        locator.tap()
    else:
        locator.click()


@pytest.mark.parametrize("size", ["1280", "390"])
def test_every_question_kind_is_answered_by_mouse(annotate, size):
    page, annotator = annotate(size)
    no_overflow(page)
    question = lambda ident: page.locator(f".qn-question[data-question='{ident}']")  # noqa: E731
    choice = lambda ident, value: question(ident).locator(  # noqa: E731
        f".qn-choice[data-value='{json.dumps(value)}']"
    )
    tap_or_click(page, choice("topic", "health"), size)
    tap_or_click(page, choice("topic", "money"), size)
    tap_or_click(page, choice("issues", "vague"), size)
    tap_or_click(page, choice("issues", "wrong"), size)
    tap_or_click(page, choice("helpful", 1), size)
    tap_or_click(page, choice("helpful", 1), size)  # a second click clears
    assert choice("helpful", 1).get_attribute("aria-checked") == "false"
    tap_or_click(page, choice("helpful", 3), size)
    slider = question("sure").locator("input[type=range]")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    # Chromium moves a range thumb on a pointer press on its track (a synthetic tap does not).
    page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)
    value = int(page.locator(".qn-slider-value").inner_text())
    assert 65 <= value <= 85
    question("why").locator("textarea").fill("Clear enough")
    tap_or_click(page, choice("better", 0), size)
    assert page.locator("#validation").inner_text() == "Ready to submit."
    screenshot(page, f"questionnaire-mouse-{size}")
    tap_or_click(page, page.locator("#submit"), size)
    assert submitted_answer(page, annotator) == {**EXPECTED, "sure": value}


def test_markdown_fields_are_text_side_by_side_on_a_wide_screen(annotate):
    page, _ = annotate("1280")
    left = page.locator(".qn-field[data-field='left']")
    right = page.locator(".qn-field[data-field='right']")
    assert left.locator("strong").inner_text() == "Yes."
    assert "**" not in left.inner_text()
    assert abs(left.bounding_box()["y"] - right.bounding_box()["y"]) < 1
    assert left.bounding_box()["x"] < right.bounding_box()["x"]
    phone, _ = annotate("390")
    left, right = (phone.locator(f".qn-field[data-field='{f}']") for f in ("left", "right"))
    assert right.bounding_box()["y"] > left.bounding_box()["y"] + left.bounding_box()["height"] - 1


def test_dataset_text_never_becomes_html(live_server, page):
    hostile = {
        "id": "x",
        "prompt": '<img src=x onerror="window.__pwned=1"> hello',
        "left": "**<script>window.__pwned=2</script>** and `<b>code</b>`",
        "right": "- <i>item</i>",
    }
    project = factories.ProjectFactory(
        task_type="questionnaire", config=CONFIG, annotators_per_item=1
    )
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    import_items(
        project=project, stream=io.BytesIO((json.dumps(hostile) + "\n").encode()), fmt="jsonl"
    )
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".qn-field")
    assert page.locator(".qn-field[data-field='prompt'] .qn-text").inner_text() == hostile["prompt"]
    assert page.locator(".qn-field[data-field='left'] strong").inner_text().startswith("<script>")
    assert page.locator(".qn-field[data-field='right'] li").inner_text() == "<i>item</i>"
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#task img, #task script, #task b, #task i").count() == 0


@pytest.mark.parametrize("size", ["1280", "390"])
def test_a_swapped_pair_shows_its_second_field_first_and_keeps_the_answers_meaning(annotate, size):
    from tests.e2e.test_phone_and_accessibility import axe_violations

    page, annotator = annotate(size, flipped=True)
    left = page.locator(".qn-field[data-field='left']")
    right = page.locator(".qn-field[data-field='right']")
    if size == "1280":  # side by side: the right answer now stands on the left
        assert abs(left.bounding_box()["y"] - right.bounding_box()["y"]) < 1
        assert right.bounding_box()["x"] < left.bounding_box()["x"]
    else:  # stacked: the right answer above the left one
        assert right.bounding_box()["y"] < left.bounding_box()["y"]
    choices = page.locator(".qn-question[data-question='better'] .qn-choice")
    assert choices.first.inner_text().startswith("Right answer is better")
    assert choices.last.inner_text().startswith("Left answer is better")
    no_overflow(page)
    assert axe_violations(page) == []
    keyboard = page.keyboard
    keyboard.press("2")  # topic: money
    keyboard.press("1")  # issues: wrong
    keyboard.press("2")  # issues: vague
    keyboard.press("ArrowDown")
    keyboard.press("3")  # helpful: Yes
    keyboard.press("End")  # sure: 100
    keyboard.press("ArrowDown")
    keyboard.type("Clear enough")
    keyboard.press("Escape")
    keyboard.press("ArrowDown")
    assert current(page) == "better"
    keyboard.press("1")  # the first choice shown: the right answer is better
    assert page.locator("#validation").inner_text() == "Ready to submit."
    screenshot(page, f"questionnaire-swapped-{size}")
    keyboard.press("Enter")
    answer = submitted_answer(page, annotator)
    assert answer["better"] == 1  # stored in the config's terms: the second field preferred
    stored = Annotation.objects.get(annotator=annotator, item__external_id="r1").presentation
    assert stored["flipped"] is True and stored["first_shown"] == {"better": "right"}
