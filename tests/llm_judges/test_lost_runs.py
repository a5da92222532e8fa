"""A run none of whose batches shows a sign of life (its worker was killed, or Redis lost its
tasks) is lost: starting the judge again takes it over, and every result is still stored once.
A run that is alive is still refused with 409."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from llm_judges import services
from llm_judges.models import JudgeResult, JudgeRun
from tests import factories
from tests.llm_judges.conftest import make_llm_judge, start

LOST_AFTER = 300
Status = JudgeRun.Status


@pytest.fixture(autouse=True)
def lost_after(settings):
    settings.CONCORD_JUDGE_LOST_AFTER_SECONDS = LOST_AFTER


def _half_done_run(judge, project, items, **changes) -> JudgeRun:
    """A run whose batch stored the first two answers, then died with its worker."""
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    for item in items[:2]:
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version=run.prompt_version,
            setting=run.setting,
            run=run,
            status=JudgeResult.Status.OK,
            answer={"sentences": [], "none": True},
        )
    JudgeRun.objects.filter(pk=run.pk).update(**changes)
    return run


def _silent_for(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "changes",
    [
        # Its worker was killed mid-batch: running, last heartbeat long ago.
        pytest.param(
            lambda: {"status": Status.RUNNING, "heartbeat_at": _silent_for(LOST_AFTER + 60)},
            id="worker-killed",
        ),
        # Redis lost the queue before any batch began: pending since long ago, no heartbeat.
        pytest.param(
            lambda: {"status": Status.PENDING, "created_at": _silent_for(LOST_AFTER + 60)},
            id="queue-lost",
        ),
    ],
)
def test_starting_again_takes_over_a_lost_run_and_stores_each_result_once(
    project, stub, api_key, django_capture_on_commit_callbacks, changes
):
    items = factories.make_items(project, 5)
    judge = make_llm_judge(stub, project, items_per_task=2)
    lost = _half_done_run(judge, project, items, **changes())

    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.pk != lost.pk
    assert (run.status, run.total, run.answered_count) == (Status.DONE, 5, 5)
    assert len(stub.chat_requests()) == 3  # only the unfinished items were judged
    assert JudgeResult.objects.count() == 5
    assert sorted(JudgeResult.objects.values_list("item_id", flat=True)) == sorted(
        i.pk for i in items
    )
    assert set(JudgeResult.objects.values_list("run_id", flat=True)) == {run.pk}
    lost.refresh_from_db()
    assert lost.status == Status.FAILED and lost.error.startswith("Lost:")
    assert lost.finished_at is not None

    # The lost run's task, redelivered late (visibility timeout), stores and calls nothing.
    report = services.judge_batch_process(run_id=lost.pk, item_ids=[i.pk for i in items])
    assert report.stopped == "run failed"
    assert JudgeResult.objects.count() == 5 and len(stub.chat_requests()) == 3


def test_a_run_whose_batch_showed_a_sign_of_life_recently_is_still_refused_with_409(
    project, researcher, researcher_client, stub, api_key
):
    items = factories.make_items(project, 3)
    judge = make_llm_judge(stub, project)
    alive = _half_done_run(
        judge, project, items, status=Status.RUNNING, heartbeat_at=_silent_for(LOST_AFTER - 30)
    )
    response = researcher_client.post(
        f"/api/projects/{project.slug}/judge-runs/", {"judge": judge.name}, format="json"
    )
    assert response.status_code == 409, response.content
    assert response.json()["code"] == "conflict"
    alive.refresh_from_db()
    assert alive.status == Status.RUNNING and JudgeRun.objects.count() == 1
    assert len(stub.chat_requests()) == 0


def test_a_pending_run_whose_tasks_wait_in_the_queue_is_not_lost(project, stub, api_key):
    factories.make_items(project, 2)
    judge = make_llm_judge(stub, project)
    services.judge_run_start(judge=judge, project=project, enqueue=False)
    with pytest.raises(services.JudgeError) as refused:
        services.judge_run_start(judge=judge, project=project, enqueue=False)
    assert refused.value.code == "conflict"


def test_a_working_batch_records_a_heartbeat_on_its_run(project, stub, api_key, monkeypatch):
    from llm_judges.services import batch_engine

    items = factories.make_items(project, 3)
    judge = make_llm_judge(stub, project)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    assert run.heartbeat_at is None
    beats = []
    real = batch_engine.judge_run_heartbeat

    def counting(**kwargs):
        beats.append(kwargs)
        real(**kwargs)

    monkeypatch.setattr(batch_engine, "judge_run_heartbeat", counting)
    # Every status check of the working batch is due a heartbeat.
    monkeypatch.setattr(batch_engine, "STATUS_CHECK_SECONDS", 0)
    monkeypatch.setattr(batch_engine, "HEARTBEAT_SECONDS", 0)
    before = timezone.now()
    services.judge_batch_process(run_id=run.pk, item_ids=[i.pk for i in items])
    run.refresh_from_db()
    assert run.heartbeat_at is not None and run.heartbeat_at >= before
    assert len(beats) >= 1 + len(items)  # when it starts, then while it works


def test_a_scheduled_retry_keeps_its_run_alive_until_it_is_due(project, stub, api_key):
    factories.make_items(project, 1)
    judge = make_llm_judge(stub, project)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    due = timezone.now() + timedelta(seconds=LOST_AFTER * 4)
    services.judge_run_heartbeat(run_id=run.pk, until=due)
    services.judge_run_heartbeat(run_id=run.pk)  # another batch: does not move it back
    run.refresh_from_db()
    assert run.heartbeat_at == due
    JudgeRun.objects.filter(pk=run.pk).update(created_at=_silent_for(LOST_AFTER * 2))
    assert not services.lost_runs(runs=JudgeRun.objects.filter(pk=run.pk)).exists()
