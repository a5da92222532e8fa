"""Stance labels in a real browser: the whole response and its sentences, keyboard only."""

import io
import json
from pathlib import Path

from annotation.models import Annotation, Item
from studies.services.imports import import_items
from task_types.stance.task import GUIDELINES
from tests import factories
from tests.e2e.conftest import login

SCREENSHOTS = Path(__file__).resolve().parents[3] / "bench" / "out"

RECORDS = [
    {
        "id": "honey-L2",
        "claim": "Honey cures seasonal allergies.",
        "response": (
            "Many people hope that local honey will ease their hay fever. "
            "The idea is that small amounts of pollen in honey train the immune system. "
            "However, controlled trials found that honey does not relieve allergy symptoms. "
            "Bees collect mostly flower pollen, while allergies are usually caused by grass and tree pollen. "
            "Honey is still a pleasant sweetener. "
            "Antihistamines and nasal sprays are proven treatments for seasonal allergies."
        ),
        "veracity": "false",
        "level": 2,
    },
    {
        "id": "walk-L0",
        "claim": "Walking every day improves mood.",
        "response": "Yes. Regular walks are linked to better mood. Daylight helps too.",
        "veracity": "true",
        "level": 0,
    },
]


def setup_project():
    project = factories.ProjectFactory(
        task_type="stance", config={"k": 4}, annotators_per_item=1, guidelines=GUIDELINES
    )
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    body = "".join(json.dumps(r) + "\n" for r in RECORDS).encode()
    import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    return project, annotator


def current_row(page) -> str:
    return page.locator(".st-row.current").get_attribute("data-row")


def test_annotator_labels_a_response_and_its_sentences_with_the_keyboard_only(live_server, page):
    project, annotator = setup_project()
    targets = Item.objects.get(external_id="honey-L2").prepared["targets"]
    assert len(targets) == 4
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".st-row")
    assert page.locator(".st-row").count() == 5  # the whole response + 4 sentences
    assert page.locator("#st-response .st-sentence.target").count() == 4
    assert current_row(page) == "0"

    keyboard = page.keyboard
    keyboard.press("d")  # whole response: disagree, moves to sentence 1
    assert current_row(page) == "1"
    keyboard.press("a")  # sentence 1: agree (on its own), moves on
    keyboard.press("u")  # sentence 2: not sure ...
    keyboard.press("n")  # ... and neutral
    keyboard.press("ArrowUp")
    keyboard.press("ArrowUp")  # back to sentence 1
    assert current_row(page) == "1"
    keyboard.press("n")  # change sentence 1 to neutral
    assert current_row(page) == "2"
    keyboard.press("ArrowDown")
    keyboard.press("d")  # sentence 3: disagree
    assert page.locator("#submit").is_disabled()
    assert page.locator("#validation").inner_text() == "Label sentence 4 on its own too (row 5)."
    keyboard.press("n")  # sentence 4: neutral (last row, stays)
    assert current_row(page) == "4"
    assert page.locator("#validation").inner_text() == "Ready to submit."
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "stance.png"), full_page=True)
    keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")

    answer = Annotation.objects.get(annotator=annotator, item__external_id="honey-L2").answer
    indices = [t["index"] for t in targets]
    assert answer == {
        "label": "disagree",
        "not_sure": False,
        "sentences": [
            {"index": indices[0], "label": "neutral", "not_sure": False},
            {"index": indices[1], "label": "neutral", "not_sure": True},
            {"index": indices[2], "label": "disagree", "not_sure": False},
            {"index": indices[3], "label": "neutral", "not_sure": False},
        ],
    }


def test_the_instructions_and_worked_examples_are_one_click_away(live_server, page):
    project, annotator = setup_project()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".st-row")
    assert page.locator("#guidelines").is_hidden()
    page.click("#st-help")
    guidelines = page.locator("#guidelines")
    assert guidelines.is_visible()
    text = guidelines.inner_text()
    assert "Three worked examples" in text
    assert (
        "Example 1 — Agree" in text
        and "Example 2 — Disagree" in text
        and "Example 3 — Neutral" in text
    )
    assert "independently of the paragraph" in text


def test_dataset_text_is_shown_as_text(live_server, page):
    project = factories.ProjectFactory(task_type="stance", config={"k": 2}, annotators_per_item=1)
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    hostile = {
        "id": "x",
        "claim": '<img src=x onerror="window.__pwned=1"> cures colds.',
        "response": "It does not <b>cure</b> colds. <script>window.__pwned=2</script> Rest helps.",
    }
    import_items(
        project=project, stream=io.BytesIO((json.dumps(hostile) + "\n").encode()), fmt="jsonl"
    )
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".st-row")
    assert page.locator("#st-claim").inner_text() == hostile["claim"]
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#task img, #task b, #task script").count() == 0
