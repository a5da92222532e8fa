"""Review and adjudication: disagreements by task-type rules, majority vote, final answers, export."""

import json
from collections import Counter

from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from annotation import review, services, task_types
from annotation.models import Adjudication, Item
from projects.models import Membership
from studies.services.exports import export_csv, export_jsonl
from tests.conftest import client_for
from tests.crowd.conftest import RIGHT, WRONG, add_annotator, crowd_project


def answered(project, answers_per_item):
    """Three annotators answer the project's regular items in order with the given answers."""
    people = [add_annotator(project) for _ in range(3)]
    for answers in answers_per_item:
        for user, answer in zip(people, answers, strict=True):
            assignment = services.assignment_next(project=project, annotator=user)
            services.annotation_submit(assignment=assignment, answer=answer)
    return people


def test_citation_recovery_agreement_compares_the_chosen_sentences_not_the_rating():
    task_type = task_types.get("citation_recovery")
    assert task_type.answer_key({**RIGHT, "helpfulness": 10}) == task_type.answer_key(
        {**RIGHT, "helpfulness": 90}
    )
    assert task_type.answer_key(RIGHT) != task_type.answer_key(WRONG)
    assert task_type.answer_key({"sentences": [], "none": True, "helpfulness": 5}) == "[]"


def test_majority_needs_more_than_half_of_the_answers():
    assert review.majority_key(["a", "a", "b"]) == "a"
    assert review.majority_key(["a", "b"]) is None
    assert review.majority_key(["a", "b", "c"]) is None
    assert review.majority_key([]) is None


@given(st.lists(st.sampled_from("abc"), max_size=40))
def test_the_majority_is_the_key_held_by_more_than_half(keys):
    counts = Counter(keys)
    expected = next((key for key, n in counts.items() if n * 2 > len(keys)), None)
    assert review.majority_key(keys) == expected


def test_reviewers_see_the_items_where_annotators_disagree_and_record_the_final_answer(db):
    project = crowd_project(crowd={}, regular=3, controls=0, per_item=3)
    rated = {**RIGHT, "helpfulness": 95}  # same sentences, another rating: agreement
    split = {"sentences": [2], "none": False, "helpfulness": 50}
    answered(project, [[RIGHT, rated, RIGHT], [RIGHT, WRONG, RIGHT], [RIGHT, WRONG, split]])
    items = list(Item.objects.filter(project=project, kind="regular").order_by("position"))
    disputed = review.disputed_items(project=project)
    assert [(d["external_id"], d["distinct"], d["majority"]) for d in disputed] == [
        (items[1].external_id, 2, True),
        (items[2].external_id, 3, False),
    ]

    reviewer = add_annotator(project)
    Membership.objects.filter(user=reviewer).update(role="reviewer")
    browser = Client()
    browser.force_login(reviewer)
    listing = browser.get(f"/p/{project.slug}/review/").content.decode()
    assert items[2].external_id in listing and items[0].external_id not in listing
    page = browser.get(f"/p/{project.slug}/review/{items[2].id}/").content.decode()
    assert "Record final answer" in page and 'id="cr-sentences"' in page  # the task's own UI
    data = json.loads(
        page.split('id="review-data" type="application/json">')[1].split("</script>")[0]
    )
    assert len(data["answers"]) == 3 and data["initial"] is None  # no majority to start from

    api = client_for(reviewer)
    url = f"/api/projects/{project.slug}/review/{items[2].id}/adjudication/"
    refused = api.post(
        url, {"answer": {"sentences": [99], "none": False, "helpfulness": 5}}, format="json"
    )
    assert refused.status_code == 400 and "sentences" in refused.data["errors"]
    first = api.post(
        url, {"answer": RIGHT, "note": "sentence 2 restates the evidence"}, format="json"
    )
    second = api.post(url, {"answer": split}, format="json")
    assert (first.status_code, first.data["version"], second.data["version"]) == (201, 1, 2)
    versions = list(
        Adjudication.objects.filter(item=items[2])
        .order_by("version")
        .values_list("is_current", flat=True)
    )
    assert versions == [False, True]
    assert [
        d["external_id"] for d in review.disputed_items(project=project, unresolved_only=True)
    ] == [items[1].external_id]

    rows = [json.loads(line) for line in export_jsonl(project=project)]
    by_item = {}
    for row in rows:
        by_item.setdefault(row["item_id"], []).append(row)
    assert {str(r["majority"]) for r in by_item[items[1].external_id]} == {"[1]"}
    assert {str(r["majority"]) for r in by_item[items[2].external_id]} == {"None"}
    assert all(r["adjudicated"] == split for r in by_item[items[2].external_id])
    assert all(r["adjudicated"] is None for r in by_item[items[0].external_id])
    assert sorted(r["selected_sentences"] for r in by_item[items[2].external_id]) == [[0], [1], [2]]
    header = next(export_csv(project=project)).splitlines()[0].split(",")
    assert {"majority", "adjudicated", "excluded", "annotator_qualification"} <= set(header)


def test_a_disqualified_annotator_does_not_make_a_disagreement(db):
    project = crowd_project(crowd={}, regular=1, controls=0, per_item=3)
    people = answered(project, [[RIGHT, RIGHT, WRONG]])
    assert len(review.disputed_items(project=project)) == 1
    Membership.objects.filter(user=people[2]).update(qualification="disqualified")
    assert review.disputed_items(project=project) == []


def test_annotators_and_other_projects_cannot_reach_review(db):
    project = crowd_project(crowd={}, regular=1, controls=0, per_item=3)
    people = answered(project, [[RIGHT, WRONG, WRONG]])
    item = Item.objects.get(project=project, kind="regular")
    url = f"/api/projects/{project.slug}/review/{item.id}/adjudication/"
    assert client_for(people[0]).post(url, {"answer": RIGHT}, format="json").status_code == 404
    other = crowd_project(crowd={}, regular=1, controls=0)
    elsewhere = client_for(other.researcher)
    assert elsewhere.post(url, {"answer": RIGHT}, format="json").status_code == 404
    foreign = Item.objects.get(project=other, kind="regular")
    own = client_for(project.researcher)
    assert (
        own.post(
            f"/api/projects/{project.slug}/review/{foreign.id}/adjudication/",
            {"answer": RIGHT},
            format="json",
        ).status_code
        == 404
    )
    assert not Adjudication.objects.exists()


def test_the_reviewer_page_is_in_the_reviewers_language_and_answers_keep_their_direction(db):
    project = crowd_project(crowd={}, regular=1, controls=0, per_item=3)
    split = {"sentences": [2], "none": False, "helpfulness": 50}
    answered(project, [[RIGHT, WRONG, split]])
    (item,) = Item.objects.filter(project=project, kind="regular")
    reviewer = add_annotator(project)
    Membership.objects.filter(user=reviewer).update(role="reviewer")
    browser = Client(HTTP_ACCEPT_LANGUAGE="de")
    browser.force_login(reviewer)
    listing = browser.get(f"/p/{project.slug}/review/").content.decode()
    assert "Einträge, bei denen sich die Annotierenden uneinig sind" in listing
    assert "die gewählten Sätze" in listing  # the task type's agreement basis, translated
    assert "Verschiedene Antworten" in listing and "Different answers" not in listing
    page = browser.get(f"/p/{project.slug}/review/{item.id}/").content.decode()
    assert "Was die Annotierenden geantwortet haben" in page
    assert "Diese Antwort übernehmen" in page and "Use this answer" not in page
    assert "Endgültige Antwort speichern" in page and "Record final answer" not in page
    assert "Kommentare" in page and "3 Antworten" in page
    # What annotators and reviewers wrote takes its own direction, not the page's.
    assert page.count('<code class="answer-text" dir="auto">') == 3
    for box in (
        'id="send-back-note" dir="auto"',
        'id="review-note" dir="auto"',
        'id="comment-body" dir="auto"',
    ):
        assert box in page
