"""A judge's pre-selection must never tell annotators which items are controls: it is shown on
every regular item or on none, never on controls, and not at all where controls are dealt."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment, Batch, Item
from llm_judges import selectors, services
from llm_judges.models import Judge, JudgeResult, Preselection, PreselectionShown
from llm_judges.selectors import _setting
from tests import factories
from tests.conftest import client_for
from tests.crowd.conftest import add_annotator, crowd_project

ANSWER = {"sentences": [1], "none": False}


def make_judge(project, name="j1") -> Judge:
    """The project's own LLM judge (its answers are stored by hand: it needs no endpoint)."""
    return Judge.objects.create(project=project, name=name, kind="llm", model="m")


def answer_items(judge, items, project):
    for item in items:
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version=judge.prompt_version,
            setting=_setting(project),
            status="ok",
            answer=ANSWER,
        )


def statuses_by_kind(client, assignments) -> dict[str, set[int]]:
    seen: dict[str, set[int]] = {}
    for assignment in assignments:
        code = client.post(f"/api/assignments/{assignment.pk}/preselection/").status_code
        seen.setdefault(assignment.item.kind, set()).add(code)
    return seen


def first_batch(project, user) -> list[Assignment]:
    client = client_for(user)
    first = client.post(f"/api/projects/{project.slug}/next/").data
    batch_id = Assignment.objects.get(pk=first["id"]).batch_id
    return list(Assignment.objects.filter(batch_id=batch_id).select_related("item"))


def test_a_judge_run_on_regular_items_only_does_not_mark_the_controls(db):
    """The reviewer's reproduction: a run with filters={"kind": ["regular"]} used to give 200 on
    regular items and 204 on controls."""
    project = crowd_project(crowd={"batch_size": 4, "controls_per_batch": 2}, regular=8, controls=4)
    judge = make_judge(project)
    answer_items(judge, Item.objects.filter(project=project, kind="regular"), project)
    with pytest.raises(services.JudgeError, match="mixes control items"):
        services.preselection_enable(project=project, judge=judge)
    Preselection.objects.create(project=project, judge=judge, prompt_version=judge.prompt_version)
    user = add_annotator(project)
    assert statuses_by_kind(client_for(user), first_batch(project, user)) == {
        "regular": {204},
        "control": {204},
    }
    assert not PreselectionShown.objects.exists()


def test_controls_imported_after_the_run_switch_the_pre_selection_off_everywhere(db):
    project = crowd_project(crowd={"batch_size": 4, "controls_per_batch": 2}, regular=8, controls=0)
    judge = make_judge(project)
    answer_items(judge, Item.objects.filter(project=project), project)
    services.preselection_enable(project=project, judge=judge)  # no controls yet
    assert selectors.preselection_status(project=project)["showing"] is True

    factories.make_items(project, 4, kind="control", start=1000)
    answer_items(judge, Item.objects.filter(project=project, kind="control"), project)  # even so
    status = selectors.preselection_status(project=project)
    assert status["showing"] is False and "mixes control items" in status["reason"]
    user = add_annotator(project)
    assert statuses_by_kind(client_for(user), first_batch(project, user)) == {
        "regular": {204},
        "control": {204},
    }


def test_asking_for_a_control_costs_the_same_queries_as_a_regular_item(db):
    project = crowd_project(crowd={"batch_size": 4, "controls_per_batch": 2}, regular=8, controls=4)
    judge = make_judge(project)
    answer_items(judge, Item.objects.filter(project=project, kind="regular"), project)
    Preselection.objects.create(project=project, judge=judge, prompt_version=judge.prompt_version)
    user = add_annotator(project)
    client = client_for(user)
    counts = {}
    for assignment in first_batch(project, user):
        with CaptureQueriesContext(connection) as queries:
            client.post(f"/api/assignments/{assignment.pk}/preselection/")
        counts.setdefault(assignment.item.kind, set()).add(len(queries))
    assert counts["regular"] == counts["control"] and len(counts["regular"]) == 1


def test_without_an_answer_for_every_item_no_item_shows_one(project, annotator):
    items = factories.make_items(project, 4)
    judge = make_judge(project)
    answer_items(judge, items[:3], project)  # a run filtered by group, or one that failed on one
    services.preselection_enable(project=project, judge=judge)
    status = selectors.preselection_status(project=project)
    assert status["showing"] is False
    assert "no parsed answer yet for 1 of the project's 4 items" in status["reason"]
    client = client_for(annotator)
    codes = set()
    for _ in range(4):
        assignment = client.post(f"/api/projects/{project.slug}/next/").data
        codes.add(client.post(f"/api/assignments/{assignment['id']}/preselection/").status_code)
        client.post(
            f"/api/assignments/{assignment['id']}/submit/",
            {"answer": {**ANSWER, "helpfulness": 50}},
            format="json",
        )
    assert codes == {204}

    answer_items(judge, items[3:], project)
    assert selectors.preselection_status(project=project) == {
        "preselection": Preselection.objects.get(),
        "showing": True,
        "reason": "",
    }
    first = Assignment.objects.filter(annotator=annotator).order_by("sequence").first()
    assert client.post(f"/api/assignments/{first.pk}/preselection/").status_code == 200


def test_qualification_rounds_show_no_pre_selection_and_main_batches_do(db):
    project = crowd_project(
        crowd={"batch_size": 2, "qualification_required": True, "qualification_pass_mark": 0.5},
        regular=4,
        controls=0,
        qualification=2,
    )
    judge = make_judge(project)
    answer_items(judge, Item.objects.filter(project=project), project)
    services.preselection_enable(project=project, judge=judge)
    user = add_annotator(project)
    client = client_for(user)
    by_batch = {}
    for _ in range(4):
        data = client.post(f"/api/projects/{project.slug}/next/").data
        code = client.post(f"/api/assignments/{data['id']}/preselection/").status_code
        by_batch.setdefault(data["batch"]["kind"], set()).add(code)
        answer = {"sentences": [1], "none": False, "helpfulness": 50}
        client.post(f"/api/assignments/{data['id']}/submit/", {"answer": answer}, format="json")
    assert by_batch == {Batch.Kind.QUALIFICATION: {204}, Batch.Kind.MAIN: {200}}


def test_the_judges_page_says_why_enabling_is_refused(db):
    project = crowd_project(crowd={"batch_size": 4, "controls_per_batch": 2}, regular=4, controls=2)
    judge = make_judge(project)
    client = Client()
    client.force_login(project.researcher)
    response = client.post(
        f"/p/{project.slug}/judges/", {"action": "preselection", "judge": judge.pk}, follow=True
    )
    assert "tell annotators which items are the controls" in response.content.decode()
    assert not Preselection.objects.exists()
