"""The events other apps announce reach a real receiver: a finished crowd batch, a finished judge
run, a ready agreement snapshot (answers, complete items and imports: test_webhooks.py)."""

import json

import pytest

from agreement import services as agreement
from agreement.reports import AnnotatorFilter, ReportOptions
from annotation import services as workflow
from llm_judges import services as judges
from tests.agreement import helpers
from tests.crowd.conftest import RIGHT, add_annotator, crowd_project
from tests.llm_judges.conftest import start
from webhooks import services


@pytest.fixture(autouse=True)
def _eager(celery_eager):
    """Deliveries run in-process here, even where CI points Celery at Redis (a real worker:
    test_webhooks_worker.py)."""


def subscribe(project, user, receiver, *events):
    services.subscription_create(project=project, user=user, url=receiver.url, events=list(events))


def sent(receiver) -> list[dict]:
    return [json.loads(r["body"]) for r in receiver.requests]


def test_a_finished_batch_is_announced_without_its_completion_code(
    db, receiver, local_receivers_allowed, django_capture_on_commit_callbacks
):
    project = crowd_project(crowd={"batch_size": 3, "controls_per_batch": 2, "min_controls": 9})
    subscribe(project, project.researcher, receiver, "batch.finished")
    user = add_annotator(project)
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            assignment = workflow.assignment_next(project=project, annotator=user)
            workflow.annotation_submit(assignment=assignment, answer=RIGHT)
    (payload,) = sent(receiver)
    assert payload["event"] == "batch.finished"
    assert payload["data"]["size"] == 5 and payload["data"]["kind"] == "main"
    assert payload["data"]["annotator"].startswith("ann-")
    from annotation.models import Batch

    code = Batch.objects.get(pk=payload["data"]["batch"]).code
    assert code not in receiver.requests[0]["body"].decode()


def test_a_finished_judge_run_is_announced_with_its_counts(
    project, researcher, items, receiver, local_receivers_allowed,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    subscribe(project, researcher, receiver, "judge_run.finished")
    judge = judges.judge_create(
        project=project, name="minilm", kind="embedding", model="all-MiniLM-L6-v2",
        parameters={"threshold": 0.6},
    )  # fmt: skip
    run = start(judge, project, django_capture_on_commit_callbacks)
    (payload,) = sent(receiver)
    assert payload["event"] == "judge_run.finished"
    assert payload["data"]["run"] == run.pk and payload["data"]["status"] == "done"
    assert payload["data"]["judge"] == "minilm" and payload["data"]["total"] == len(items)


def test_a_ready_agreement_snapshot_is_announced(
    db, researcher, receiver, local_receivers_allowed, django_capture_on_commit_callbacks
):
    project, _, _ = helpers.seeded_study(researcher)
    subscribe(project, researcher, receiver, "agreement_snapshot.ready")
    with django_capture_on_commit_callbacks(execute=True):
        agreement.snapshot_request(
            project=project, annotator_filter=AnnotatorFilter(), options=ReportOptions(n_boot=50)
        )
    (payload,) = sent(receiver)
    assert payload["event"] == "agreement_snapshot.ready"
    assert payload["data"]["page"] == f"/p/{project.slug}/agreement/"
    assert payload["data"]["answers"] > 0
