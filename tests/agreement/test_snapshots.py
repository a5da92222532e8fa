"""Cached reports: computed once per data version and coder choice, never twice at a time."""

from __future__ import annotations

import json
import os
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from agreement import celery_tasks, services
from agreement.models import AgreementSnapshot
from agreement.reports import AnnotatorFilter, ReportOptions
from config.celery import app as celery_app
from tests.agreement import helpers
from tests.conftest import require

OPTIONS = ReportOptions(n_boot=50)
Status = AgreementSnapshot.Status


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def study(db, researcher):
    return helpers.seeded_study(researcher)


@pytest.fixture
def builds(monkeypatch):
    """Counts report computations."""
    calls = []
    real = services.build_report

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "build_report", counting)
    return calls


@pytest.fixture
def queued(monkeypatch):
    """Records the snapshot ids sent to Celery instead of sending them."""
    sent = []
    monkeypatch.setattr(celery_tasks.compute_snapshot, "delay", lambda pk: sent.append(pk))
    return sent


def request(project, annotator_filter=None, **kwargs):
    return services.snapshot_request(
        project=project,
        annotator_filter=annotator_filter or AnnotatorFilter(),
        options=OPTIONS,
        **kwargs,
    )


def test_small_projects_compute_inline_and_a_repeat_request_uses_the_cache(study, builds):
    project, _, _ = study
    first = request(project)
    assert first.fresh and first.active is None
    assert first.report["tables"]["agreement"]["rows"][0]["alpha"] == pytest.approx(0.175)
    second = request(project)
    assert second.snapshot.pk == first.snapshot.pk
    assert len(builds) == 1
    assert AgreementSnapshot.objects.count() == 1


def test_new_answers_make_the_report_out_of_date_and_it_is_recomputed(study, builds):
    project, items, users = study
    first = request(project)
    helpers.answer(items["c1"], users["c"], [1])  # a revision
    second = request(project)
    assert second.fresh and second.snapshot.pk != first.snapshot.pk
    assert len(builds) == 2
    # The superseded snapshot of the same choice is removed.
    assert list(AgreementSnapshot.objects.values_list("pk", flat=True)) == [second.snapshot.pk]


def test_a_qualification_change_changes_the_data_version(study, builds):
    project, _, users = study
    request(project)
    users["c"].memberships.update(qualification="disqualified")
    state = request(project)
    assert len(builds) == 2 and len(state.report["coders"]) == 2


def test_each_coder_choice_has_its_own_snapshot(study, builds):
    project, _, users = study
    pseudonym = users["a"].memberships.get().pseudonym
    request(project)
    state = request(project, AnnotatorFilter(exclude=(pseudonym,)))
    assert len(state.report["coders"]) == 2
    assert AgreementSnapshot.objects.count() == 2


def test_large_projects_queue_one_task_and_a_second_request_joins_it(
    study, settings, queued, builds, django_capture_on_commit_callbacks
):
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 5
    project, items, users = study
    with django_capture_on_commit_callbacks(execute=True):
        first = request(project)
        second = request(project)
    assert first.report is None and first.active is not None
    assert second.active.pk == first.active.pk
    assert len(queued) == 1 and not builds
    # Newer data while it is pending: still no second computation.
    helpers.answer(items["c2"], users["a"], [1])
    with django_capture_on_commit_callbacks(execute=True):
        third = request(project)
    assert third.active.pk == first.active.pk and len(queued) == 1
    assert AgreementSnapshot.objects.count() == 1


def test_a_worker_claims_a_snapshot_once_even_if_the_message_is_delivered_twice(
    study, settings, queued, builds
):
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0
    project, _, _ = study
    pk = request(project).active.pk
    assert celery_tasks.compute_snapshot.run(pk) == "done"
    assert celery_tasks.compute_snapshot.run(pk) == "skipped"
    assert len(builds) == 1
    state = request(project)
    assert state.fresh and state.snapshot.pk == pk and state.snapshot.duration_s is not None


def test_while_a_new_version_computes_the_previous_report_is_shown_as_out_of_date(
    study, settings, queued
):
    project, items, users = study
    done = request(project)
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0
    helpers.answer(items["c2"], users["a"], [1])
    state = request(project)
    assert state.snapshot.pk == done.snapshot.pk and not state.fresh
    assert state.active is not None


def test_the_task_computes_the_snapshot_when_celery_runs_eagerly(
    study, settings, django_capture_on_commit_callbacks
):
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0
    project, _, _ = study
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            request(project)
    finally:
        celery_app.conf.task_always_eager = eager
    state = request(project)
    assert state.fresh and state.report["answers"] == 12


def test_the_task_is_named_time_limited_and_acknowledged_late():
    task = celery_tasks.compute_snapshot
    assert task.name == "agreement.compute_snapshot"
    assert task.acks_late is True
    assert task.time_limit == services.TIME_LIMIT_S
    assert task.soft_time_limit < task.time_limit


def test_an_abandoned_computation_is_queued_again_by_exactly_one_request(
    study, settings, queued, django_capture_on_commit_callbacks
):
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0
    project, _, _ = study
    with django_capture_on_commit_callbacks(execute=True):
        pk = request(project).active.pk
    old = timezone.now() - services.STALE_AFTER - timedelta(seconds=1)
    AgreementSnapshot.objects.filter(pk=pk).update(status=Status.RUNNING, started_at=old)
    with django_capture_on_commit_callbacks(execute=True):
        request(project)
        request(project)
    assert queued == [pk, pk]  # the first queueing, then one re-queue
    assert AgreementSnapshot.objects.get(pk=pk).status == Status.PENDING


def test_a_failed_computation_is_recorded_and_can_be_retried(
    study, monkeypatch, queued, django_capture_on_commit_callbacks
):
    project, _, _ = study

    def broken(**kwargs):
        raise RuntimeError("bad data on item c2")

    monkeypatch.setattr(services, "gather", broken)
    state = request(project)
    assert state.report is None and "bad data on item c2" in state.failed.error
    assert request(project).failed.pk == state.failed.pk  # not recomputed on every request
    with django_capture_on_commit_callbacks(execute=True):
        assert services.snapshot_retry(snapshot=state.failed)
    assert queued == [state.failed.pk]
    assert not services.snapshot_retry(snapshot=state.failed)  # no longer failed


def test_concurrent_requests_start_one_computation_on_postgresql(transactional_db, settings):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    project, _, _ = helpers.seeded_study()
    sent = []
    real_delay = celery_tasks.compute_snapshot.delay
    celery_tasks.compute_snapshot.delay = lambda pk: sent.append(pk)
    start = threading.Barrier(8)
    errors = []

    def work():
        try:
            start.wait()
            request(project)
        except Exception as exc:  # surfaced below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work) for _ in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    finally:
        celery_tasks.compute_snapshot.delay = real_delay
    assert not [thread.name for thread in threads if thread.is_alive()], "still running after 600 s"
    assert not errors
    assert AgreementSnapshot.objects.filter(project=project).count() == 1
    assert len(sent) == 1


def test_with_redis_two_requests_put_one_message_on_the_broker(
    study, settings, django_capture_on_commit_callbacks
):
    require(bool(os.environ.get("REDIS_URL")), "needs Redis (set REDIS_URL)")
    import redis

    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0
    assert not celery_app.conf.task_always_eager  # a real broker
    project, _, _ = study
    client = redis.Redis.from_url(os.environ["REDIS_URL"])

    def ours(pk):
        found = []
        for raw in client.lrange("celery", 0, -1):
            headers = json.loads(raw).get("headers", {})
            if (
                headers.get("task") == "agreement.compute_snapshot"
                and headers.get("argsrepr") == f"({pk},)"
            ):
                found.append(raw)
        return found

    with django_capture_on_commit_callbacks(execute=True):
        pk = request(project).active.pk
        request(project)
    try:
        assert len(ours(pk)) == 1
    finally:
        for raw in ours(pk):
            client.lrem("celery", 0, raw)


def test_new_judge_results_make_the_report_out_of_date(study, builds):
    from llm_judges.models import Judge, JudgeResult

    project, items, _ = study
    request(project)
    judge = Judge.objects.create(
        project=project, name="nli", kind="nli", model="m", prompt_version="v1"
    )
    JudgeResult.objects.create(
        item=items["c0"],
        judge=judge,
        prompt_version="v1",
        status=JudgeResult.Status.OK,
        answer={"sentences": [1]},
    )
    state = request(project)
    assert len(builds) == 2 and state.report["available_judges"] == ["nli"]
