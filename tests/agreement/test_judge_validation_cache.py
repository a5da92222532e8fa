"""The judge validation page cached per data version (issue 31): never computed over every item
inside a request on a large project, stale figures shown as stale and recomputed, the
labels-needed projection read from stored pilots."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agreement import celery_tasks, selectors, services
from agreement.models import AgreementSnapshot
from llm_judges.models import JudgeResult
from tests.agreement.test_judge_validation import _researcher_client, stance_study
from tests.agreement.test_labels_needed import FIGURE, need_study

Status = AgreementSnapshot.Status


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def queued(monkeypatch):
    """Records the snapshot ids sent to Celery instead of sending them."""
    sent: list[int] = []
    monkeypatch.setattr(celery_tasks.compute_snapshot, "delay", lambda pk: sent.append(pk))
    return sent


@pytest.fixture
def computations(monkeypatch):
    """Counts judge validation computations."""
    calls: list[int] = []
    real = selectors.judge_validation_figures

    def counting(**kwargs):
        calls.append(1)
        return real(**kwargs)

    monkeypatch.setattr(selectors, "judge_validation_figures", counting)
    return calls


def _url(project):
    return reverse("agreement-judge-validation", args=[project.slug])


@pytest.mark.django_db
def test_a_small_project_computes_inline_once_per_data_version(computations):
    project = stance_study()
    client = _researcher_client(project)
    first = client.get(_url(project)).content.decode()
    assert "Confusion matrix: gpt" in first and "up to date" in first
    client.get(_url(project))
    assert len(computations) == 1
    client.get(_url(project), {"subset": "agreed"})  # another subset: its own figures
    assert len(computations) == 2
    assert AgreementSnapshot.objects.filter(kind="judge_validation").count() == 2
    assert not AgreementSnapshot.objects.filter(kind="report").exists()


@pytest.mark.django_db
def test_a_large_project_is_queued_never_computed_in_the_request_and_stale_figures_are_marked(
    settings, queued, computations, django_capture_on_commit_callbacks
):
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 3
    project = stance_study()
    client = _researcher_client(project)
    with django_capture_on_commit_callbacks(execute=True):
        waiting = client.get(_url(project))
    assert waiting.status_code == 200 and not computations
    html = waiting.content.decode()
    assert "Computing the judges against the humans" in html
    assert 'http-equiv="refresh"' in html and "Confusion matrix" not in html
    assert client.get(_url(project), {"download": "judges"}).status_code == 409
    (snapshot_id,) = queued
    assert services.snapshot_compute(snapshot_id=snapshot_id) == "done"  # the worker's part

    fresh = client.get(_url(project)).content.decode()
    assert "up to date" in fresh and 'id="stale-note"' not in fresh
    gpt_before = _gpt_accuracy(client, project)

    # The judge changes its mind on i2 (humans: disagree): the figures are out of date.
    JudgeResult.objects.filter(judge__name="gpt", item__external_id="i2").update(
        answer={"label": "disagree", "not_sure": False, "sentences": []}
    )
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get(_url(project))
    html = stale.content.decode()
    assert len(computations) == 1  # still nothing computed inside a request
    assert "out of date" in html and 'id="stale-note"' in html and "up to date" not in html
    assert "Confusion matrix: gpt" in html  # the last figures, shown as such
    assert 'http-equiv="refresh"' in html
    assert _gpt_accuracy(client, project) == gpt_before
    assert len(queued) == 2
    client.get(_url(project))  # a second request joins the computation under way
    assert len(queued) == 2 and AgreementSnapshot.objects.filter(status="pending").count() == 1

    assert services.snapshot_compute(snapshot_id=queued[1]) == "done"
    again = client.get(_url(project)).content.decode()
    assert "up to date" in again and 'id="stale-note"' not in again
    assert _gpt_accuracy(client, project) == pytest.approx(4 / 5)  # i2 now right
    assert AgreementSnapshot.objects.filter(kind="judge_validation").count() == 1  # superseded


def _gpt_accuracy(client, project) -> float:
    lines = client.get(_url(project), {"download": "judges"}).content.decode().splitlines()
    header = lines[0].split(",")
    gpt = next(line.split(",") for line in lines[1:] if line.startswith("gpt,"))
    return float(gpt[header.index("accuracy")])


@pytest.mark.django_db(transaction=True)
def test_a_broker_outage_is_said_and_a_failed_computation_can_be_retried(settings, monkeypatch):
    """Outside a test transaction, as in production: the task is queued as the request ends."""
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 3
    project = stance_study()
    client = _researcher_client(project)

    def refuse(pk):
        raise ConnectionError("broker away")

    monkeypatch.setattr(celery_tasks.compute_snapshot, "delay", refuse)
    page = client.get(_url(project)).content.decode()
    assert "Could not queue the update" in page and "broker away" in page
    failed = AgreementSnapshot.objects.get(status=Status.FAILED)
    assert failed.never_queued and failed.kind == "judge_validation"
    # A computation that failed on its data waits for the researcher's Retry.
    AgreementSnapshot.objects.filter(pk=failed.pk).update(started_at=failed.finished_at)
    sent: list[int] = []
    monkeypatch.setattr(celery_tasks.compute_snapshot, "delay", lambda pk: sent.append(pk))
    assert "The computation failed." in client.get(_url(project)).content.decode()
    assert not sent
    retried = client.post(_url(project), {"action": "retry", "snapshot": str(failed.pk)})
    assert retried.status_code == 302 and sent == [failed.pk]
    assert services.snapshot_compute(snapshot_id=failed.pk) == "done"
    assert "up to date" in client.get(_url(project)).content.decode()


@pytest.mark.django_db
def test_the_stored_pilots_project_as_the_data_does():
    project = need_study()
    stored = selectors.judge_validation_figures(project=project)["need"]
    for width in (None, 0.35, 0.2):
        inline = selectors.labels_needed(project=project, target_width=width)
        cached = selectors.labels_needed_stored(stored=stored, target_width=width)
        assert (cached.figures, cached.judges, cached.figure, cached.judge) == (
            inline.figures,
            inline.judges,
            inline.figure,
            inline.judge,
        )
        assert cached.projection.need == inline.projection.need
        assert cached.projection.current_alone == inline.projection.current_alone
        assert cached.projection.tables == inline.projection.tables
    with pytest.raises(selectors.BadProjectionQuery, match="no figure"):
        selectors.labels_needed_stored(stored=stored, figure="Nope")
    assert selectors.labels_needed_stored(stored=stored, figure=FIGURE, judge="gpt").projection


@pytest.mark.django_db
def test_the_pages_queries_do_not_grow_with_the_project(django_assert_num_queries):
    small, large = stance_study(), stance_study(n_copies=6)
    clients = {project.pk: _researcher_client(project) for project in (small, large)}
    counts = []
    for project in (small, large):
        client = clients[project.pk]
        assert client.get(_url(project)).status_code == 200  # computes (small: inline)
        with CaptureQueriesContext(connection) as captured:
            page = client.get(_url(project), {"width": "0.3"})
        assert page.status_code == 200 and "up to date" in page.content.decode()
        counts.append(len(captured))
    with django_assert_num_queries(counts[0]):
        clients[large.pk].get(_url(large), {"width": "0.3", "subset": "all"})
    assert counts[0] == counts[1], counts


@pytest.mark.django_db
def test_the_page_counts_current_answers_not_their_versions(computations):
    # Found by an outside probe: each revision of an answer raised "from N answers".
    from annotation.models import Assignment
    from tests.agreement import helpers

    project = stance_study()
    current = Assignment.objects.filter(project=project, state="submitted").count()
    first = Assignment.objects.filter(project=project).order_by("pk").first()
    for _ in range(3):  # three revisions of one answer: more versions, as many answers
        helpers.answer(first.item, first.annotator, [], 0)
    client = _researcher_client(project)
    page = client.get(_url(project)).content.decode()
    snapshot = AgreementSnapshot.objects.get(kind="judge_validation")
    assert snapshot.answers == current
    assert f"from {current} answers" in page
