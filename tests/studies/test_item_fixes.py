"""Fixing a flagged item's record (issue 30, item 2: "researchers … fix and re-open it"): the
record is checked as an import checks it, the item's revision moves, answers keep the revision
they were made on (page, export, bundle), judges' answers go, the audit log keeps before and
after, and nothing of another project can be reached."""

import json

import pytest

from annotation import services
from annotation.models import Annotation, Item
from llm_judges.models import Judge, JudgeResult
from projects.audit import AuditKind
from projects.models import AuditEntry
from studies.services.exports import export_jsonl
from studies.services.item_fixes import item_fix
from tests import factories
from tests.conftest import client_for

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def _fixed_record(item: Item, **changes) -> dict:
    return {**item.payload, **changes}


def _answer(project, user) -> Annotation:
    assignment = services.assignment_next(project=project, annotator=user)
    annotation, _ = services.annotation_submit(assignment=assignment, answer=ANSWER)
    return annotation


@pytest.fixture
def one_item(project):
    (item,) = factories.make_items(project, 1)
    return item


def test_a_fix_moves_the_revision_and_earlier_answers_keep_theirs(
    project, annotator, researcher, one_item
):
    first = _answer(project, annotator)
    assert first.item_revision == 1
    judge = Judge.objects.create(project=project, name="j", kind="embedding", model="m")
    JudgeResult.objects.create(
        item=one_item, judge=judge, prompt_version="v1", setting="sample", status="ok", answer={}
    )
    evidence = [dict(e) for e in one_item.payload["evidence"]]
    evidence[0]["text"] = "A working link to the evidence."
    fix = item_fix(
        project=project,
        item_id=one_item.pk,
        record=_fixed_record(one_item, evidence=evidence),
        by=researcher,
        note="the evidence link was dead",
    )
    assert (fix.revision, fix.earlier_answers) == (2, 1)
    assert "payload" in fix.changed_fields
    one_item.refresh_from_db()
    assert one_item.revision == 2
    assert one_item.payload["evidence"][0]["text"] == "A working link to the evidence."
    assert not JudgeResult.objects.filter(item=one_item).exists()
    first.refresh_from_db()
    assert first.item_revision == 1  # the earlier answer saw the earlier record

    second_annotator = factories.UserFactory(username=factories.unique("annotator"))
    factories.MembershipFactory(project=project, user=second_annotator, role="annotator")
    assert _answer(project, second_annotator).item_revision == 2

    entry = AuditEntry.objects.get(project=project, kind=AuditKind.ITEM_FIXED)
    assert entry.actor == researcher and "the evidence link was dead" in entry.summary
    before = entry.changes["payload"]["before"]["evidence"][0]["text"]
    assert before != "A working link to the evidence."
    assert entry.changes["revision"] == 2

    rows = [json.loads(line) for line in "".join(export_jsonl(project=project)).splitlines()]
    assert sorted(r["item_revision"] for r in rows) == [1, 2]


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"claim": ""}, "record.claim", "claim"),
        ({"id": "another-item"}, "record", "keeps the item's id"),
        ({}, "record", "nothing to fix"),
    ],
)
def test_a_bad_fix_is_refused_naming_the_field_and_changes_nothing(
    project, researcher, one_item, change, field, words
):
    client = client_for(researcher)
    response = client.post(
        f"/api/projects/{project.slug}/items/{one_item.pk}/fix/",
        {"record": _fixed_record(one_item, **change)},
        format="json",
    )
    assert response.status_code == 400, response.data
    assert response.data["field"] == field and words in response.data["detail"]
    one_item.refresh_from_db()
    assert one_item.revision == 1
    assert not AuditEntry.objects.filter(project=project, kind=AuditKind.ITEM_FIXED).exists()


def test_the_api_fixes_and_reports_the_revision(project, researcher, one_item):
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/items/{one_item.pk}/fix/",
        {"record": _fixed_record(one_item, claim="A corrected claim."), "note": "typo"},
        format="json",
    )
    assert response.status_code == 200, response.data
    assert response.data["revision"] == 2 and response.data["earlier_answers"] == 0
    assert "payload" in response.data["changed"]
    listed = client_for(researcher).get(f"/api/projects/{project.slug}/items/").data
    assert listed["results"][0]["revision"] == 2


def test_other_projects_and_other_roles_cannot_fix(project, researcher, annotator, one_item):
    eve = factories.UserFactory(username="eve")
    other = factories.ProjectFactory()
    factories.MembershipFactory(project=other, user=eve, role="researcher")
    body = {"record": _fixed_record(one_item, claim="Eve was here.")}
    # eve's own project in the URL, project A's item id: not found, nothing changed
    for user, slug in ((eve, other.slug), (eve, project.slug), (annotator, project.slug)):
        response = client_for(user).post(
            f"/api/projects/{slug}/items/{one_item.pk}/fix/", body, format="json"
        )
        assert response.status_code in (403, 404), (user, slug, response.status_code)
    one_item.refresh_from_db()
    assert one_item.revision == 1 and one_item.payload["claim"] != "Eve was here."


def test_the_page_form_keeps_what_was_typed_when_refused(client, project, researcher, one_item):
    client.force_login(researcher)
    url = f"/p/{project.slug}/items/{one_item.pk}/"
    page = client.get(url).content.decode()
    assert "Fix the item's record" in page and "&quot;claim&quot;: &quot;Claim number 0" in page
    typed = '{"id": "' + one_item.external_id + '", "claim": "half typed'
    refused = client.post(url + "fix/", {"record": typed, "note": "my note"})
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "not JSON" in body and "half typed" in body and "my note" in body
    record = json.dumps(_fixed_record(one_item, claim="A corrected claim."))
    done = client.post(url + "fix/", {"record": record, "note": ""}, follow=True)
    assert done.status_code == 200 and "Item fixed: revision 2." in done.content.decode()
    assert "revision 2" in done.content.decode()


def test_an_oversized_or_too_deep_record_is_refused(client, project, researcher, one_item):
    client.force_login(researcher)
    url = f"/p/{project.slug}/items/{one_item.pk}/fix/"
    deep = "[" * 5000 + "]" * 5000
    response = client.post(url, {"record": '{"x": ' + deep + "}"})
    assert response.status_code == 400 and "cannot be stored" in response.content.decode()
    one_item.refresh_from_db()
    assert one_item.revision == 1


def test_a_bundle_carries_revisions_and_refuses_an_answer_on_a_later_one(
    project, annotator, researcher, one_item, tmp_path
):
    from studies.bundle_loading import BundleRefused, _item_revision

    _answer(project, annotator)
    item_fix(
        project=project,
        item_id=one_item.pk,
        record=_fixed_record(one_item, claim="A corrected claim."),
        by=researcher,
    )
    from studies.bundles import _annotations, _items

    (item_row,) = _items(project)
    (answer_row,) = _annotations(project, {annotator.pk: "ann-1"})
    assert item_row["revision"] == 2 and answer_row["item_revision"] == 1
    one_item.refresh_from_db()
    with pytest.raises(BundleRefused, match="later than the item's revision 2"):
        _item_revision({"item_revision": 3}, one_item, "annotations.jsonl line 1")


def test_the_api_refuses_a_record_nested_deeper_than_an_import_allows(
    project, researcher, one_item
):
    """Found by a probe: the page refused 200 levels, the API stored 900."""
    deep: list = []
    for _ in range(200):
        deep = [deep]
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/items/{one_item.pk}/fix/",
        {"record": _fixed_record(one_item, provenance=deep)},
        format="json",
    )
    assert response.status_code == 400 and response.data["field"] == "record"
    assert "nested more than 64 levels" in response.data["detail"]
    one_item.refresh_from_db()
    assert one_item.revision == 1
