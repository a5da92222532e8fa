"""A full crowd pilot in a real browser: Prolific link, qualification round, main batch with a
control, completion code and the way back to Prolific (also after a failed qualification round,
on Prolific and on MTurk); the researcher's quality view."""

import io
import json
from pathlib import Path

from annotation.models import Batch
from crowd import services as crowd_services
from projects.models import Membership
from studies.services.imports import import_items
from tests import factories
from tests.e2e.conftest import login

SCREENSHOTS = Path(__file__).resolve().parents[3] / "bench" / "out"
CROWD = {
    "batch_size": 2,
    "controls_per_batch": 1,
    "qualification_required": True,
    "qualification_pass_mark": 0.5,
    "qualification_min_seconds": 1,
    "min_seconds_per_item": 1,
    "prolific_completion_code": "CPILOT1",
}


def pilot_project():
    researcher = factories.UserFactory(username=factories.unique("researcher"))
    project = factories.ProjectFactory(
        name="Citation recovery pilot",
        annotators_per_item=2,
        crowd=CROWD,
        guidelines="## Your task\nChoose the sentences that should cite the highlighted evidence.",
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    records = [factories.citation_payload(n, id=f"qual-{n}", kind="qualification") for n in (1, 2)]
    records += [factories.citation_payload(n, id=f"main-{n}") for n in (3, 4)]
    records.append(factories.citation_payload(5, id="check-1", kind="control", gold_sentences=[1]))
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    return project, researcher


def entry(live_server, project, pid, session):
    link = crowd_services.entry_link(
        base_url=live_server.url, project=project, platform="prolific", study="PILOT1"
    )
    return link.replace("{{%PROLIFIC_PID%}}", pid).replace("{{%SESSION_ID%}}", session)


def answer_item(page, sentence_index):
    """Choose one sentence (the gold of every item here is sentence 2, index 1), rate, submit."""
    before = page.locator("#position").inner_text()
    page.click(f"#cr-sentences li[data-index='{sentence_index}']")
    page.locator("#cr-helpfulness").focus()
    page.keyboard.press("ArrowRight")
    # sleep-ok: the project's minimum time per item is measured by the browser's and server's clocks
    page.wait_for_timeout(1100)  # stay over the project's minimum time per item
    page.click("#submit")
    page.wait_for_function(
        "before => document.querySelector('#position').textContent !== before", arg=before
    )


def test_a_worker_passes_the_pilot_does_a_batch_with_a_control_and_gets_the_completion_code(
    live_server, page
):
    project, researcher = pilot_project()
    page.goto(entry(live_server, project, "5f00000000000000000000a1", "sessA1"))
    page.wait_for_selector("#cr-sentences li")
    assert (
        page.locator("#position").inner_text().startswith("Qualification round 1 · item 1 of 2 · #")
    )
    answer_item(page, 1)
    assert (
        page.locator("#position").inner_text().startswith("Qualification round 1 · item 2 of 2 · #")
    )
    answer_item(page, 1)
    assert page.locator("#position").inner_text().startswith("Batch 1 · item 1 of 3 · #")
    assert "passed the qualification" in page.locator("#banner").inner_text()
    for position in (2, 3):
        answer_item(page, 1)
        assert (
            page.locator("#position").inner_text().startswith(f"Batch 1 · item {position} of 3 · #")
        )
    answer_item(page, 1)  # one of the three was the control: nothing on the page said which

    stop = page.locator("#stop")
    stop.wait_for()
    batch = Batch.objects.get(kind="main", external_ref="prolific:sessA1")
    assert batch.state == "finished"
    assert page.locator("#stop-title").inner_text() == "Batch complete – thank you!"
    assert page.locator("#stop-code-value").inner_text() == batch.code
    assert page.locator("#crowd-return").is_visible()
    assert page.locator("#start-batch").is_hidden()  # one batch per Prolific session
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "crowd_completion.png"), full_page=True)
    member = Membership.objects.get(
        project=project, user__crowd_entries__worker_id="5f00000000000000000000a1"
    )
    assert member.qualification == "qualified"

    # Back to Prolific with the study's completion code (Prolific itself is not reachable here).
    page.route(
        "https://app.prolific.com/**", lambda route: route.fulfill(status=200, body="Prolific")
    )
    page.click("#crowd-return")
    page.wait_for_url("https://app.prolific.com/submissions/complete?cc=CPILOT1")

    # A second worker fails the qualification round and gets a polite message, no main items.
    page.context.clear_cookies()
    page.goto(entry(live_server, project, "5f00000000000000000000b2", "sessB2"))
    page.wait_for_selector("#cr-sentences li")
    answer_item(page, 0)
    answer_item(page, 3)
    page.locator("#stop").wait_for()
    assert (
        page.locator("#stop-title").inner_text() == "Thank you for taking the qualification round"
    )
    assert page.locator("#stop-code").is_hidden()
    # No screened-out code in this study: the way back is Prolific's own "return", not a dead end.
    assert page.locator("#crowd-return").is_hidden()
    assert page.locator("#crowd-return-screened-out").is_visible()
    page.screenshot(path=str(SCREENSHOTS / "crowd_qualification_failed.png"), full_page=True)
    page.click("#crowd-return-screened-out")
    page.wait_for_selector("#return-how")
    assert "return your submission" in page.locator("#return-how").inner_text()
    assert page.locator("#return-link").get_attribute("href") == (
        "https://app.prolific.com/submissions"
    )
    assert "prolific-" not in page.locator("header").inner_text()  # no internal account name

    # The researcher sees both outcomes and leaves feedback the second worker will see.
    page.context.clear_cookies()
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/quality/")
    passed_row = page.locator("tr", has_text="prolific-5f00000000000000000000a1")
    failed_row = page.locator("tr", has_text="prolific-5f00000000000000000000b2")
    assert "Qualified" in passed_row.inner_text() and "1 / 1" in passed_row.inner_text()
    assert "Round 1: 2/2" in passed_row.inner_text()
    assert "Disqualified" in failed_row.inner_text() and "Round 1: 0/2" in failed_row.inner_text()
    failed_row.locator("summary").click()
    failed_row.locator("textarea[name=feedback]").fill(
        "Sentence 2 restates the highlighted passage: look for that."
    )
    failed_row.locator("button[value=feedback]").click()
    page.wait_for_selector(".message.success")
    page.fill("input[name=study]", "PILOT1")
    page.click("text=Make link")
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in page.locator(".link-box").first.inner_text()
    page.screenshot(path=str(SCREENSHOTS / "crowd_quality_view.png"), full_page=True)
    assert Membership.objects.get(
        user__crowd_entries__worker_id="5f00000000000000000000b2"
    ).feedback.startswith("Sentence 2")


def test_a_worker_stopped_by_controls_sees_a_polite_message_with_the_researchers_feedback(
    live_server, page
):
    project = factories.ProjectFactory(
        annotators_per_item=1, crowd={"batch_size": 1, "controls_per_batch": 2, "min_controls": 2}
    )
    factories.make_items(project, 4)
    factories.make_items(project, 4, kind="control", start=100)
    user = factories.UserFactory()
    factories.MembershipFactory(
        project=project,
        user=user,
        role="annotator",
        feedback="Please read each explanation to the end.",
    )
    login(page, live_server, user.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    assert "read each explanation" in page.locator(".feedback-note").first.inner_text()
    answered = 0
    while page.locator("#task").is_visible():  # a regular item and two controls, in some order
        answer_item(page, 3)  # the wrong sentence (gold is index 1)
        answered += 1
    assert answered in (2, 3)  # stopped right after the second control
    assert page.locator("#stop-title").inner_text() == "Thank you for your work"
    assert "cannot offer you more items" in page.locator("#stop-message").inner_text()
    assert (
        page.locator("#stop-feedback-text").inner_text()
        == "Please read each explanation to the end."
    )
    page.screenshot(path=str(SCREENSHOTS / "crowd_disqualified.png"), full_page=True)
    assert Membership.objects.get(user=user).qualification == "disqualified"


def test_a_reviewer_records_the_final_answer_of_a_disputed_item(live_server, page):
    from annotation import services
    from annotation.models import Adjudication

    project = factories.ProjectFactory(annotators_per_item=3)
    factories.make_items(project, 1)
    reviewer = factories.UserFactory()
    factories.MembershipFactory(project=project, user=reviewer, role="reviewer")
    for sentences in ([1], [1], [2]):
        user = factories.UserFactory()
        factories.MembershipFactory(project=project, user=user, role="annotator")
        assignment = services.assignment_next(project=project, annotator=user)
        services.annotation_submit(
            assignment=assignment, answer={"sentences": sentences, "none": False, "helpfulness": 70}
        )
    login(page, live_server, reviewer.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/review/")
    page.click("a.button:has-text('Review')")
    page.wait_for_selector("#cr-sentences li.selected[data-index='1']")  # starts from the majority
    page.locator(".use-answer").nth(2).click()
    page.wait_for_selector("#cr-sentences li.selected[data-index='2']")
    page.fill("#review-note", "Sentence 3 is the one that uses the passage.")
    page.click("#submit")
    page.wait_for_selector("#review-state:has-text('Final answer recorded')")
    page.screenshot(path=str(SCREENSHOTS / "crowd_review.png"), full_page=True)
    # After a decision the reviewer goes on: no disputed item is left, so back to the list.
    page.wait_for_url(f"{live_server.url}/p/{project.slug}/review/")
    assert "No disputed item is waiting" in page.locator(".messages").inner_text()
    decision = Adjudication.objects.get()
    assert decision.answer == {"sentences": [2], "none": False, "helpfulness": 70}
    assert decision.reviewer == reviewer and decision.note.startswith("Sentence 3")


def test_an_mturk_worker_who_fails_the_qualification_round_is_told_to_return_the_hit(
    live_server, page
):
    project, _ = pilot_project()
    link = crowd_services.entry_link(
        base_url=live_server.url, project=project, platform="mturk", study="PILOT1"
    )
    page.goto(f"{link}&assignmentId=ASSIGNQ1&hitId=HITQ&workerId=AQ1WORKER")
    start = page.locator("a", has_text="Open the task").get_attribute("href")
    page.goto(f"{live_server.url}{start}")  # the HIT opens the task in a new top-level tab
    page.wait_for_selector("#cr-sentences li")
    answer_item(page, 0)
    answer_item(page, 3)
    page.locator("#stop").wait_for()
    back = page.locator("#crowd-return-screened-out")
    assert back.is_visible() and "press Return at the top of the HIT" in back.inner_text()
    assert page.locator("#crowd-return").is_hidden()  # no code to paste: this HIT is returned
    assert "mturk-" not in page.locator("header").inner_text()
