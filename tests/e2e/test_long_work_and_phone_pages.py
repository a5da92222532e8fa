"""Issue 26's page points in a real browser: the import form's busy state while it uploads, and
the pages seen at 390 px (each test failed before its fix). Screenshots go to bench/out/pages/."""

from __future__ import annotations

import io
import json

import pytest

from annotation.models import Annotation, Item
from studies.models import ImportJob
from studies.services.import_jobs import import_job_run
from studies.services.imports import import_items
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, SCREENSHOTS, demo_project, screenshot

SIZES = {"1280": {"viewport": {"width": 1280, "height": 900}}, "390": PHONE}


def test_the_import_form_says_it_is_uploading_and_cannot_be_sent_twice(live_server, page, tmp_path):
    project, researcher, _ = demo_project("citation_recovery", items=0)
    upload = tmp_path / "items.jsonl"
    upload.write_text('{"id": "x"}\n' * 2000)
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    # The page's own submission is kept from leaving the page (a test-only listener, after the
    # page's), so that the state it shows while uploading can be read.
    page.evaluate(
        "document.querySelector('#import-form').addEventListener('submit', (e) => e.preventDefault())"
    )
    page.set_input_files("#import-form input[name=file]", str(upload))
    page.click("#import-form button[type=submit]")
    page.wait_for_function("document.querySelector('#import-form button[type=submit]').disabled")
    assert page.locator("#import-form").get_attribute("aria-busy") == "true"
    status = page.locator("#import-form .busy-status")
    assert status.is_visible() and status.inner_text().startswith("Uploading… 23 KB")
    screenshot(page, "import-uploading-1280")


def test_the_import_form_still_sends_the_file_with_its_busy_state(live_server, page, tmp_path):
    project, researcher, _ = demo_project("citation_recovery", items=0)
    upload = tmp_path / "items.jsonl"
    payload = factories.citation_payload(1)
    upload.write_text(json.dumps(payload) + "\n")
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.set_input_files("#import-form input[name=file]", str(upload))
    with page.expect_navigation():  # the POST's answer (a redirect to the project page)
        page.click("#import-form button[type=submit]")
    page.wait_for_load_state()
    job = ImportJob.objects.get(project=project)  # the file arrived
    if job.status == ImportJob.Status.QUEUED:  # a broker is up (PostgreSQL and Redis)
        import_job_run(job_id=job.pk)
    assert Item.objects.filter(project=project).count() == 1
    assert not page.locator("#import-form button[type=submit]").is_disabled()


# Per Likert point: the words of its label that the browser broke across lines, and its box.
LIKERT_POINTS = """() => Array.from(document.querySelectorAll('.qn-likert .qn-choice')).map((b) => {
  const label = b.querySelector('span:not(.qn-point)');
  const text = label.firstChild;
  const split = [];
  let at = 0;
  for (const word of text.textContent.split(' ')) {
    const range = document.createRange();
    range.setStart(text, at);
    range.setEnd(text, at + word.length);
    const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
    if (tops.size > 1) split.push(word);
    at += word.length + 1;
  }
  const box = b.getBoundingClientRect();
  return {split, left: Math.round(box.left), top: Math.round(box.top)};
})"""


@pytest.mark.parametrize("size", ["1280", "390"])
def test_a_likert_scale_splits_no_word_and_keeps_its_points_in_one_row_or_one_column(
    live_server, browser, size
):
    project, _, annotator = demo_project("questionnaire")
    context = browser.new_context(**SIZES[size])
    page = context.new_page()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".qn-likert .qn-choice")
    points = page.evaluate(LIKERT_POINTS)
    assert len(points) == 5
    assert [p["split"] for p in points] == [[]] * 5, points  # "Moderate|ly" before
    rows, columns = {p["top"] for p in points}, {p["left"] for p in points}
    # One row (wide screens) or one column in order (phones): never 4 + 1.
    assert len(rows) == 1 or (len(columns) == 1 and [p["top"] for p in points] == sorted(rows))
    if size == "390":
        assert len(columns) == 1
    screenshot(page, f"questionnaire-likert-{size}")
    context.close()


@pytest.mark.parametrize("size", ["1280", "390"])
def test_previous_items_are_left_aligned_lines_that_start_with_their_number(
    live_server, browser, size
):
    project, _, annotator = demo_project("stance", items=2)
    context = browser.new_context(**SIZES[size])
    page = context.new_page()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 1')")
    page.click("#history-toggle")
    entry = page.locator("#history-list button").first
    entry.wait_for()
    geometry = entry.evaluate(
        """(button) => {
          const range = document.createRange();
          range.selectNodeContents(button);
          const first = range.getClientRects()[0];
          const list = button.closest('ol').getBoundingClientRect();
          return {text: first.left - list.left, marker: getComputedStyle(button.closest('li')).listStyleType};
        }"""
    )
    # Before: centred text with the list's own "1." apart from it, on the entry's last line.
    assert geometry["marker"] == "none" and abs(geometry["text"]) <= 1, geometry
    assert entry.inner_text().startswith("Item 1 #")
    page.locator("#history").screenshot(path=str(SCREENSHOTS / f"previous-items-{size}.png"))
    context.close()


def citation_project_with_a_long_evidence_list():
    long = "A passage of the article, long enough to take a few lines on a phone screen. " * 2
    payload = factories.citation_payload(
        1,
        sentences=30,
        masked_evidence=20,
        claim="A claim as long as the real ones: " + "what a politician said, in full, " * 5,
        evidence=[{"id": i, "text": f"{i}: {long}"} for i in range(1, 31)],
    )
    project, researcher, annotator = demo_project("citation_recovery", items=0)
    import_items(
        project=project, stream=io.BytesIO(json.dumps(payload).encode() + b"\n"), fmt="jsonl"
    )
    return project, annotator


@pytest.mark.parametrize("size", ["1280", "390"])
def test_the_highlighted_evidence_is_in_view_above_the_submit_bar(live_server, browser, size):
    project, annotator = citation_project_with_a_long_evidence_list()
    context = browser.new_context(**SIZES[size])
    page = context.new_page()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-evidence li.target")
    boxes = page.evaluate(
        """() => {
          const box = (selector) => document.querySelector(selector).getBoundingClientRect();
          const target = box('#cr-evidence li.target'), list = box('#cr-evidence'), bar = box('#submitbar');
          return {top: target.top, bottom: target.bottom, list: list.top, bar: bar.top, y: scrollY};
        }"""
    )
    assert boxes["y"] == 0  # the page starts at its top
    # Before: centred in a list running on under the fixed bar, it started under the bar (390 px).
    assert boxes["list"] <= boxes["top"] and boxes["bottom"] <= boxes["bar"], boxes
    screenshot(page, f"citation-evidence-{size}")
    context.close()


def test_the_helpfulness_slider_has_a_key_and_an_item_needs_no_tab(live_server, page):
    project, annotator = citation_project_with_a_long_evidence_list()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-evidence li.target")
    for key in ["2", "h", "ArrowRight", "ArrowRight", "PageUp", "Escape", "Enter"]:
        page.keyboard.press(key)
    page.wait_for_function(
        "document.querySelector('#position').textContent.startsWith('All')"
        " || !document.querySelector('#done').hidden"
    )
    answer = Annotation.objects.get(annotator=annotator).answer
    assert answer == {"sentences": [1], "none": False, "helpfulness": 62}


# Every control and cell of the page's tables: how far past the screen's right edge it reaches.
TABLE_CONTROLS_PAST_THE_EDGE = """(screen) => [...document.querySelectorAll(
    '.table td, .table button, .table a, .table summary')]
  .filter((e) => e.getBoundingClientRect().width > 0)
  .map((e) => [e.tagName + ':' + (e.dataset.label || e.textContent.trim().slice(0, 20)),
               Math.round(e.getBoundingClientRect().right - screen)])
  .filter(([, past]) => past > 0)"""


def test_the_tables_with_actions_show_them_on_a_phone(live_server, browser):
    """Project, judges, quality and review tables stack their rows into labelled blocks at
    390 px: before, their action buttons (Cancel, Disqualify, Review) sat off-screen in a
    sideways-scrolling table."""
    from annotation import services as workflow
    from llm_judges import services as judges
    from llm_judges.models import ModelEndpoint
    from projects.models import Membership
    from tests.crowd.conftest import RIGHT, WRONG, add_annotator, crowd_project

    project = crowd_project(crowd={"batch_size": 2}, regular=1, controls=0, per_item=2)
    people = [add_annotator(project) for _ in range(2)]
    for user, answer in zip(people, [RIGHT, WRONG], strict=True):
        assignment = workflow.assignment_next(project=project, annotator=user)
        workflow.annotation_submit(assignment=assignment, answer=answer)
    Membership.objects.filter(user=project.researcher).update(role="researcher")
    endpoint = ModelEndpoint.objects.create(
        name="local", base_url="http://127.0.0.1:9/v1", allow_private_network=True
    )
    endpoint.projects.add(project)
    judge = judges.judge_create(
        project=project, name="a-judge-with-a-long-name", kind="llm", model="m", endpoint=endpoint
    )
    judges.judge_run_start(judge=judge, project=project, enqueue=False)  # pending: Cancel
    context = browser.new_context(**PHONE)
    page = context.new_page()
    login(page, live_server, project.researcher.username, factories.PASSWORD)
    for path, action in [
        ("", "#annotator-progress td"),
        ("judges/", "#judge-runs button:has-text('Cancel')"),
        ("quality/", ".qc-table button:has-text('Disqualify')"),
        ("review/", "#review-items a:has-text('Review')"),
    ]:
        page.goto(f"{live_server.url}/p/{project.slug}/{path}")
        page.locator(action).first.wait_for()
        assert page.evaluate(TABLE_CONTROLS_PAST_THE_EDGE, 390) == [], path
        screenshot(page, f"tables-{path.strip('/') or 'project'}-390")
    context.close()
