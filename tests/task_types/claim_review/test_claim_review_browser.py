"""Claim review in a real browser: revise (remove with a reason, revise, add), verify (agree,
disagree with a label, label the added claim), submit; export and statistics show exactly that."""

import io
import json
from pathlib import Path

from django.core.management import call_command

from annotation.models import Annotation
from projects.models import Membership
from studies.services.exports import export_stream
from studies.services.imports import import_items
from tests import factories
from tests.conftest import REPO
from tests.e2e.conftest import login

SCREENSHOTS = REPO / "bench" / "out"
TRIAL = REPO / "data" / "fastfact" / "trial.jsonl"
ADDED = 'Taylor Swift co-wrote "Beautiful Ghosts" with Andrew Lloyd Webber.'
REVISED = 'Taylor Swift was nominated for the Golden Globe Award for Best Original Song for "Beautiful Ghosts" in 2020.'


def setup_project(search_url="https://duckduckgo.com/?q={query}"):
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(
        task_type="claim_review",
        config={"search_url": search_url},
        annotators_per_item=1,
        guidelines="## Guide\nRevise, then verify.",
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    with open(TRIAL, "rb") as stream:
        import_items(project=project, stream=stream, fmt="fastfact")
    return project, annotator


def card(page, screen, claim_id):
    return page.locator(f"#rv-{screen}-list li.rv-card[data-id='{claim_id}']")


def test_annotator_removes_revises_adds_disagrees_and_submits_and_export_and_stats_show_it(
    live_server, page
):
    project, annotator = setup_project()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#rv-revise-list li.rv-card")
    assert page.locator("#position").inner_text().startswith("Item 1 of 2")
    assert (
        page.locator("#rv-question").inner_text()
        == "In which year did Taylor Swift win a Golden Globe Award?"
    )
    assert page.locator("#rv-revise-list li.rv-card").count() == 3

    # Selecting a claim highlights its source sentence in the response.
    card(page, "revise", "43b2b7-0").locator(".rv-text").click()
    assert (
        page.locator("#rv-response mark").inner_text()
        == "Taylor Swift won her first Golden Globe Award in 2020."
    )

    # Revise claim 2 (the original stays visible), remove claim 3 with a reason, add one after claim 2.
    card(page, "revise", "c2afab-1").locator(".rv-revise").click()
    editor = card(page, "revise", "c2afab-1").locator("textarea")
    editor.fill(REVISED)
    assert (
        "received the Golden Globe"
        in card(page, "revise", "c2afab-1").locator(".rv-text").inner_text()
    )
    card(page, "revise", "e8845f-2").locator(".rv-remove").click()
    assert (
        "why it is removed" in card(page, "revise", "e8845f-2").locator(".rv-problem").inner_text()
    )
    card(page, "revise", "e8845f-2").locator("[data-reason='redundant']").click()
    page.locator("#rv-revise-list li.rv-slot").nth(2).locator("button").click()
    page.locator("#rv-revise-list li.rv-card.rv-add textarea").fill(ADDED)
    ids = page.eval_on_selector_all(
        "#rv-revise-list li.rv-card", "cards => cards.map(c => c.dataset.id)"
    )
    assert ids == ["43b2b7-0", "c2afab-1", "new-1", "e8845f-2"]

    # Nothing verified yet: submit is refused and the claims still open are marked.
    assert page.locator("#submit").is_disabled()
    assert "3 claims need a decision" in page.locator("#validation").inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "claim_review_revise.png"), full_page=True)

    page.click("#rv-to-verify")
    assert (
        page.locator("#rv-verify-list li.rv-card").count() == 3
    )  # the removed claim is not verified
    assert page.locator("#rv-verify-list li.rv-card.needs").count() == 3
    first = card(page, "verify", "43b2b7-0")
    assert first.locator(".rv-chip").inner_text() == "refuted"
    assert first.locator("details.rv-passage").count() == 10
    assert (
        "Evidence 3" in first.locator("details.rv-passage").nth(2).locator("summary").inner_text()
    )
    assert (
        "Has Taylor Swift ever won a Golden Globe?"
        in first.locator("details.rv-passage").nth(2).inner_text()
    )
    first.locator("details.rv-passage").nth(2).locator("summary").click()
    assert first.locator("details.rv-passage").nth(2).locator(".rv-passage-content").is_visible()
    assert "never won" in first.locator(".rv-reasoning").inner_text()
    search = first.locator("a.rv-search")
    assert search.get_attribute("target") == "_blank"
    assert search.get_attribute("href").startswith("https://duckduckgo.com/?q=Taylor%20Swift%20won")

    # Agree with claim 1 by key; disagree with the revised claim 2; label the added claim.
    first.locator(".rv-text").click()
    page.keyboard.press("a")
    revised = card(page, "verify", "c2afab-1")
    assert revised.locator(".rv-text").inner_text() == REVISED
    assert "Revised from:" in revised.locator(".rv-original").inner_text()
    revised.locator(".rv-disagree").click()
    labels = revised.locator(".rv-labels button").evaluate_all("bs => bs.map(b => b.dataset.label)")
    assert labels == [
        "supported",
        "refuted",
        "conflicting evidence",
        "not enough evidence",
        "irrelevant",
    ]  # without evidence too, a disagreeing annotator chooses from all five labels
    revised.locator("[data-label='refuted']").click()
    assert page.locator("#submit").is_disabled()
    assert "1 claim needs a decision" in page.locator("#validation").inner_text()
    added = card(page, "verify", "new-1")
    added.locator("[data-label='supported']").click()
    assert page.locator("#rv-verify-list li.rv-card.needs").count() == 0
    assert not page.locator("#submit").is_disabled()
    page.screenshot(path=str(SCREENSHOTS / "claim_review_verify.png"), full_page=True)

    page.click("#submit")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    annotation = Annotation.objects.get(annotator=annotator)
    assert annotation.answer == {
        "claims": [
            {"id": "43b2b7-0", "action": "keep", "agreement": "agree"},
            {
                "id": "c2afab-1",
                "action": "revise",
                "text": REVISED,
                "agreement": "disagree",
                "label": "refuted",
            },
            {"id": "new-1", "action": "add", "text": ADDED, "label": "supported"},
            {"id": "e8845f-2", "action": "remove", "reason": "redundant"},
        ]
    }

    rows = [
        json.loads(line)
        for line in "".join(export_stream(project=project, fmt="jsonl")).splitlines()
    ]
    pseudonym = Membership.objects.get(project=project, user=annotator).pseudonym
    assert {r["annotator"] for r in rows} == {pseudonym}
    assert [
        (
            r["claim_id"],
            r["action"],
            r["removal_reason"],
            r["agreement"],
            r["system_label"],
            r["annotator_label"],
        )
        for r in rows
    ] == [
        ("43b2b7-0", "unchanged", None, "agreed", "refuted", "refuted"),
        ("c2afab-1", "revised", None, "disagreed_corrected", "unsupported", "refuted"),
        ("new-1", "added", None, None, None, "supported"),
        ("e8845f-2", "removed", "redundant", None, "supported", "redundant"),
    ]
    assert (
        rows[1]["claim"].startswith("Taylor Swift received") and rows[1]["revised_claim"] == REVISED
    )
    assert rows[2]["claim"] == ADDED and rows[2]["revised_claim"] is None
    assert {(r["model"], r["prompt_source"]) for r in rows} == {("gpt-4o", "freshQA")}

    out = io.StringIO()
    call_command("claim_review_stats", project=project.slug, stdout=out)
    stats = json.loads(out.getvalue())
    expected = {
        "count": 1,
        "annotator_labels": {"refuted": 2, "supported": 1, "redundant": 1},
        "agreements": {"agreed": 1, "disagreed_corrected": 1, "verification_pending": 0},
        "operations": {"unchanged": 1, "removed": 1, "added": 1, "revised": 1},
        "reasons": {"redundant": 1},
    }
    assert stats["overall"] == expected
    assert stats["grouped"] == {
        "by_model": {"gpt-4o": expected},
        "by_prompt_source": {"freshQA": expected},
        "by_model_prompt_source": {"gpt-4o_freshQA": expected},
    }
    assert stats["metadata"] == {"total_samples": 1, "total_claims": 4, "project": project.slug}
    Path(SCREENSHOTS / "claim_review_stats.json").write_text(out.getvalue())


def test_a_project_without_search_shows_no_search_button_and_dataset_html_stays_text(
    live_server, page
):
    project, annotator = setup_project(search_url="")
    item = project.items.get(position=1)
    item.payload["question"] = '<img src=x onerror="window.__pwned = 1">'
    item.payload["claims"][0]["evidence"][0]["title"] = "<b>bold title</b>"
    item.save()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#rv-revise-list li.rv-card")
    assert page.locator("#rv-question").inner_text() == item.payload["question"]
    page.click("#rv-tab-verify")
    assert page.locator("a.rv-search").count() == 0
    assert "<b>bold title</b>" in page.locator("details.rv-passage").first.inner_text()
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#rv-question img, .rv-passage b").count() == 0


def test_a_reload_restores_revisions_removals_and_added_claims(live_server, page):
    project, annotator = setup_project()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#rv-revise-list li.rv-card")
    card(page, "revise", "c2afab-1").locator(".rv-revise").click()
    card(page, "revise", "c2afab-1").locator("textarea").fill(REVISED)
    card(page, "revise", "43b2b7-0").locator(".rv-text").click()
    page.keyboard.press("x")  # remove the selected claim by key, then its reason by key
    page.keyboard.press("2")
    page.locator("#rv-revise-list li.rv-slot").last.locator("button").click()
    page.locator("#rv-revise-list li.rv-card.rv-add textarea").fill(ADDED)
    page.wait_for_function("document.querySelector('#save-state').textContent === 'Draft saved'")
    page.reload()
    page.wait_for_selector("#rv-revise-list li.rv-card.rv-add")
    ids = page.eval_on_selector_all(
        "#rv-revise-list li.rv-card", "cards => cards.map(c => c.dataset.id)"
    )
    assert ids == ["43b2b7-0", "c2afab-1", "e8845f-2", "new-1"]
    assert (
        card(page, "revise", "43b2b7-0")
        .locator("[data-reason='not a claim']")
        .get_attribute("aria-pressed")
        == "true"
    )
    assert card(page, "revise", "c2afab-1").locator("textarea").input_value() == REVISED
    assert page.locator("#rv-revise-list li.rv-card.rv-add textarea").input_value() == ADDED
    page.click("#rv-to-verify")
    assert page.locator("#rv-verify-list li.rv-card").count() == 3
