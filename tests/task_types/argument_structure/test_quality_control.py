"""Control and qualification items of the argument-structure task can be passed (and failed):
``score()`` gives ``correct``, which quality control reads."""

import io
import json

import pytest

from annotation.models import Assignment, Item
from annotation.quality import is_correct
from studies.services.imports import import_items
from tests import factories
from tests.conftest import client_for
from tests.task_types.argument_structure.test_task import GOOD_STEPS, TASK, edit_answer, payload


def _import(project, *records):
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")


@pytest.fixture
def project(db):
    project = factories.ProjectFactory(
        task_type="argument_structure",
        config={"mode": "edit", "similarity_scorer": "none"},
        annotators_per_item=1,
    )
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    return project, annotator


def test_a_qualification_item_is_correct_when_every_step_matches_the_reference(project):
    project, _ = project
    _import(
        project,
        payload(id="q1", kind="qualification", reference_structure=GOOD_STEPS),
    )
    item = Item.objects.get(project=project, external_id="q1")
    right = edit_answer()
    assert is_correct(TASK, item, right) is True
    # Rewording a statement is not a different step: still correct.
    reworded = edit_answer(evidence=[{**e, "text": e["text"].upper()} for e in right["evidence"]])
    assert is_correct(TASK, item, reworded) is True
    wrong = edit_answer(
        [
            {"premises": ["E1"], "conclusion": "E3"},
            {"premises": ["E2"], "conclusion": "E3"},
            {"premises": ["E3"], "conclusion": "E4"},
            {"premises": ["E4"], "conclusion": "claim"},
        ]
    )
    assert is_correct(TASK, item, wrong) is False


def test_a_review_control_with_an_expected_decision_is_scored(db):
    project = factories.ProjectFactory(task_type="argument_structure", config={"mode": "review"})
    _import(
        project,
        payload(id="c1", kind="control", structure=GOOD_STEPS, expected_decision="discard"),
    )
    item = Item.objects.get(project=project)
    answer = {"faithfulness": True, "fluency": True, "validity": False}
    assert is_correct(TASK, item, {**answer, "decision": "discard"}) is True
    assert is_correct(TASK, item, {**answer, "decision": "retain"}) is False


def test_a_control_item_submitted_through_the_api_is_marked_correct(project):
    project, annotator = project
    project.crowd = {"batch_size": 1, "controls_per_batch": 1}
    project.save()
    _import(
        project,
        payload(id="r1", reference_structure=GOOD_STEPS),
        payload(id="c1", kind="control", reference_structure=GOOD_STEPS),
    )
    client = client_for(annotator)
    for _ in range(2):
        assignment = client.post(f"/api/projects/{project.slug}/next/").json()
        url = f"/api/assignments/{assignment['id']}/submit/"
        assert client.post(url, {"answer": edit_answer()}, format="json").status_code == 201
    control = Assignment.objects.get(item__external_id="c1")
    regular = Assignment.objects.get(item__external_id="r1")
    assert control.correct is True and regular.correct is None
