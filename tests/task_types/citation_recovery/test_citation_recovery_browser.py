"""Citation recovery in a real browser (headless Debian Chromium through Playwright)."""

import io
import json
from pathlib import Path

from annotation.models import Annotation
from studies.services.imports import import_items
from tests import factories
from tests.e2e.conftest import login

SCREENSHOTS = Path(__file__).resolve().parents[3] / "bench" / "out"


def setup_project(payloads):
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(
        annotators_per_item=1, guidelines="## Guide\nPick sentences."
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    body = "".join(json.dumps(p) + "\n" for p in payloads).encode()
    import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    return project, annotator


def test_annotator_selects_sentences_by_click_and_key_rates_and_submits(live_server, page):
    payload = factories.citation_payload(1, sentences=5)
    project, annotator = setup_project([payload, factories.citation_payload(2)])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    assert page.locator("#position").inner_text().startswith("Item 1 of 2")
    assert page.locator("#cr-evidence li.target").count() == 1
    page.click("#cr-sentences li[data-index='0']")
    page.click("#cr-sentences li[data-index='2']")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("4")
    assert page.locator("#submit").is_disabled()  # the slider has not been touched yet
    slider = page.locator("#cr-helpfulness")
    slider.focus()
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    assert page.locator("#cr-helpfulness-value").inner_text() == "55"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "citation_recovery.png"), full_page=True)
    page.click("#submit")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    annotation = Annotation.objects.get(annotator=annotator)
    assert annotation.answer == {"sentences": [0, 2, 3], "none": False, "helpfulness": 55}
    assert annotation.time_spent_ms > 0


def test_a_reload_restores_unsent_work_and_previous_items_can_be_revised(live_server, page):
    project, annotator = setup_project(
        [factories.citation_payload(1), factories.citation_payload(2)]
    )
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    page.click("#cr-sentences li[data-index='1']")
    page.wait_for_function("document.querySelector('#save-state').textContent === 'Draft saved'")
    page.reload()
    page.wait_for_selector("#cr-sentences li.selected[data-index='1']")
    page.keyboard.press("0")
    page.locator("#cr-helpfulness").focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Escape")  # off the slider: Enter submits
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    page.click("#history-toggle")
    page.click("#history-list button:has-text('Item 1')")
    page.wait_for_selector("#cr-none:checked")
    page.keyboard.press("0")
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    versions = list(
        Annotation.objects.filter(annotator=annotator)
        .order_by("version")
        .values_list("answer", "version")
    )
    assert versions == [
        ({"sentences": [], "none": True, "helpfulness": 49}, 1),
        ({"sentences": [2], "none": False, "helpfulness": 49}, 2),
    ]


def test_dataset_html_is_shown_as_text_never_executed(live_server, page):
    hostile = factories.citation_payload(1)
    hostile["claim"] = "<script>window.__pwned = 1</script><b>bold?</b>"
    hostile["evidence"][0]["text"] = '<img src=x onerror="window.__pwned = 2">'
    hostile["explanation"][1] = 'Sentence with <i onclick="x()">markup</i> [2].'
    project, annotator = setup_project([hostile])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    assert page.locator("#cr-claim").inner_text() == hostile["claim"]
    assert "<img src=x" in page.locator("#cr-evidence").inner_text()
    assert page.evaluate("window.__pwned === undefined")
    assert (
        page.locator("#cr-claim script, #cr-claim b, #cr-evidence img, #cr-sentences i").count()
        == 0
    )


def test_two_digit_keys_reach_sentences_beyond_nine(live_server, page):
    project, annotator = setup_project([factories.citation_payload(1, sentences=12)])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    page.keyboard.press("1")
    page.keyboard.press("1")  # sentence 11
    page.keyboard.press("3")  # no sentence 30 or more: sentence 3 at once
    page.keyboard.press("1")  # alone: sentence 1 after a short wait
    page.wait_for_selector("#cr-sentences li.selected[data-index='0']")
    selected = page.eval_on_selector_all(
        "#cr-sentences li.selected", "els => els.map(e => e.dataset.index)"
    )
    assert selected == ["0", "2", "10"]


def test_an_answer_sent_after_the_session_ended_stays_in_the_browser_until_login(live_server, page):
    project, annotator = setup_project(
        [factories.citation_payload(1), factories.citation_payload(2)]
    )
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    page.click("#cr-sentences li[data-index='1']")
    page.locator("#cr-helpfulness").focus()
    page.keyboard.press("ArrowRight")
    page.context.clear_cookies()  # the session ends while the annotator works
    page.click("#submit")
    page.wait_for_selector("#banner:not([hidden])")
    assert "log in again" in page.locator("#banner").inner_text()
    assert not Annotation.objects.exists()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")  # the outbox is sent on load
    page.wait_for_selector("#cr-sentences li")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    assert Annotation.objects.get(annotator=annotator).answer["sentences"] == [1]


def test_a_rating_only_item_asks_for_helpfulness_alone(live_server, page):
    # An explanation that cites no evidence: nothing to attribute, only to rate (issue 28).
    payload = factories.citation_payload(
        1, explanation=["Nothing is cited.", "Nor here."], masked_evidence=None
    )
    project, annotator = setup_project([payload])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    assert page.locator("#cr-rating-only").is_visible()
    assert not page.locator("#cr-select-hint").is_visible()
    assert not page.locator("#cr-none-option").is_visible()
    assert page.locator("#cr-evidence li.target").count() == 0
    page.click("#cr-sentences li[data-index='0']")  # not selectable
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("1")
    assert page.locator("#cr-sentences li.selected").count() == 0
    assert page.locator("#submit").is_disabled()  # the rating is still missing
    page.locator("#cr-helpfulness").focus()
    page.keyboard.press("ArrowLeft")
    assert page.locator("#cr-helpfulness-value").inner_text() == "49"
    page.click("#submit")
    page.wait_for_selector("#done:not([hidden])")
    assert Annotation.objects.get(annotator=annotator).answer == {"helpfulness": 49}
