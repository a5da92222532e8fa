"""Judge runs through a real Celery worker process and the real Redis broker, against the test
PostgreSQL database (``transactional_db``: the worker only sees committed rows).

Needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL): skipped on a bare laptop, required in CI.
"""

import threading
import time
import uuid

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from llm_judges import services
from llm_judges.celery_tasks import judge_batch
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from tests import factories
from tests.conftest import require
from tests.llm_judges.conftest import API_KEY, API_KEY_ENV, make_llm_judge
from tests.llm_judges.stub_llm import Reply, claim_of
from tests.llm_judges.worker import CeleryWorker, database_url, redis_reachable, wait_for

VISIBILITY_TIMEOUT = 2


@pytest.fixture
def broker(transactional_db, settings):
    """A real broker, a queue of our own, and the test process enqueueing to it."""
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    require(redis_reachable(), "needs Redis (set REDIS_URL)")
    queue = f"judges-test-{uuid.uuid4().hex[:8]}"
    settings.CONCORD_JUDGE_QUEUE = queue
    celery_app.conf.task_always_eager = False  # the autouse fixture restores it
    yield queue
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    # the queue, and kombu's bindings of the exchange named after it
    client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")


def start_worker(queue: str, **kwargs) -> CeleryWorker:
    worker = CeleryWorker(
        queue=queue,
        database_url=database_url(connection.settings_dict),
        redis_url=settings.REDIS_URL,
        env={API_KEY_ENV: API_KEY, "CONCORD_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT)},
        **kwargs,
    )
    worker.wait_ready()
    return worker


def run_status(run) -> str:
    return JudgeRun.objects.values_list("status", flat=True).get(pk=run.pk)


def test_a_real_worker_judges_every_batch_and_the_run_completes(broker, stub):
    project = factories.ProjectFactory()
    factories.make_items(project, 12)
    judge = make_llm_judge(stub, project, concurrency=4, items_per_task=5)
    worker = start_worker(broker)
    try:
        run = services.judge_run_start(judge=judge, project=project)  # autocommit: enqueued now
        wait_for(
            lambda: run_status(run) == "done", timeout=60, what="the run to finish", worker=worker
        )
    finally:
        worker.stop()
    run.refresh_from_db()
    assert (run.total, run.answered_count, run.failed_count) == (12, 12, 0)
    assert JudgeResult.objects.filter(run=run).count() == 12
    assert JudgeCall.objects.filter(run=run).count() == 12
    assert len(stub.chat_requests()) == 12
    assert run.started_at is not None and run.finished_at is not None


def test_a_worker_killed_mid_task_has_its_task_redelivered_and_each_result_stored_once(
    broker, stub
):
    project = factories.ProjectFactory()
    first, second = factories.make_items(project, 2)
    judge = make_llm_judge(
        stub, project, concurrency=1, items_per_task=10
    )  # one task, items in order
    second_call = threading.Event()
    release = threading.Event()
    calls: dict[str, int] = {}

    def responder(request):
        claim = claim_of(request)
        calls[claim] = calls.get(claim, 0) + 1
        if claim == "Claim number 1 is accurate." and calls[claim] == 1:
            second_call.set()
            return Reply(wait=release)  # hangs until the worker is dead
        return Reply()

    stub.responder = responder
    worker_a = start_worker(broker)
    worker_b = None
    try:
        run = services.judge_run_start(judge=judge, project=project)
        assert second_call.wait(60), f"the second item was never called\n{worker_a.log()}"
        wait_for(
            lambda: JudgeResult.objects.filter(item=first).exists(),
            timeout=30,
            what="the first item's result",
            worker=worker_a,
        )
        worker_a.kill()  # SIGKILL mid-task: the message stays unacknowledged in Redis
        release.set()
        assert JudgeResult.objects.count() == 1
        # sleep-ok: the broker's visibility timeout (the behaviour under test) is wall-clock time
        time.sleep(VISIBILITY_TIMEOUT + 1.5)  # past the visibility timeout: restorable
        worker_b = start_worker(broker)
        wait_for(
            lambda: run_status(run) == "done",
            timeout=60,
            what="the redelivered task",
            worker=worker_b,
        )
    finally:
        release.set()
        worker_a.kill()
        if worker_b:
            worker_b.stop()

    assert calls == {"Claim number 0 is accurate.": 1, "Claim number 1 is accurate.": 2}
    results = JudgeResult.objects.filter(run=run)
    assert sorted(results.values_list("item__external_id", flat=True)) == ["claim-0", "claim-1"]
    assert all(r.status == "ok" for r in results)
    assert JudgeCall.objects.filter(run=run).count() == 2  # the killed call never returned
    assert any("llm_judges.judge_batch" in line and "succeeded" in line for line in worker_b.lines)


def test_a_task_over_its_soft_time_limit_records_the_unfinished_items_as_failed(broker, stub):
    project = factories.ProjectFactory()
    items = factories.make_items(project, 2)
    judge = make_llm_judge(stub, project, concurrency=1, timeout=30)
    stub.responder = lambda request: Reply(delay=8)
    worker = start_worker(broker)
    try:
        run = services.judge_run_start(judge=judge, project=project, enqueue=False)
        judge_batch.apply_async(
            args=(run.pk, [i.pk for i in items]), queue=broker, soft_time_limit=2
        )
        wait_for(
            lambda: run_status(run) == "failed", timeout=60, what="the run to end", worker=worker
        )
    finally:
        worker.stop()
    run.refresh_from_db()
    assert run.failed_count == 2  # no item answered: the run ended "failed" (issue 32)
    assert set(JudgeResult.objects.values_list("error", flat=True)) == {
        "The task's time limit was reached before an answer came."
    }


def _lose_the_queue(queue: str) -> int:
    """What Redis losing its data does to a run: its queued and unacknowledged tasks are gone
    (only this test's queue is touched; other tests share the Redis database)."""
    import json

    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    lost = client.llen(queue)
    client.delete(queue)
    for tag, raw in client.hgetall("unacked").items():
        if json.loads(raw)[2] == queue:  # [message, exchange, routing key]
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)
            lost += 1
    return lost


def test_a_run_whose_worker_was_killed_and_whose_tasks_redis_lost_is_taken_over_by_a_new_start(
    broker, stub, settings
):
    project = factories.ProjectFactory()
    items = factories.make_items(project, 3)
    judge = make_llm_judge(
        stub, project, concurrency=1, items_per_task=10
    )  # one task, items in order
    second_call = threading.Event()
    release = threading.Event()
    calls: dict[str, int] = {}

    def responder(request):
        claim = claim_of(request)
        calls[claim] = calls.get(claim, 0) + 1
        if claim == "Claim number 1 is accurate." and calls[claim] == 1:
            second_call.set()
            return Reply(wait=release)  # hangs until the worker is dead
        return Reply()

    stub.responder = responder
    worker_a = start_worker(broker)
    worker_b = None
    try:
        run = services.judge_run_start(judge=judge, project=project)
        assert second_call.wait(60), f"the second item was never called\n{worker_a.log()}"
        wait_for(
            lambda: JudgeResult.objects.filter(item=items[0]).exists(),
            timeout=30,
            what="the first item's result",
            worker=worker_a,
        )
        worker_a.kill()  # SIGKILL mid-task
        release.set()
        assert _lose_the_queue(broker) == 1
        assert run_status(run) == "running"  # and nothing would ever end it
        settings.CONCORD_JUDGE_LOST_AFTER_SECONDS = 1
        mine = JudgeRun.objects.filter(pk=run.pk)
        wait_for(lambda: services.lost_runs(runs=mine).exists(), timeout=30, what="a lost run")
        worker_b = start_worker(broker)
        again = services.judge_run_start(judge=judge, project=project)  # not 409: takes over
        wait_for(
            lambda: run_status(again) == "done",
            timeout=60,
            what="the run that took over",
            worker=worker_b,
        )
    finally:
        release.set()
        worker_a.kill()
        if worker_b:
            worker_b.stop()

    assert run_status(run) == "failed"
    assert calls == {
        "Claim number 0 is accurate.": 1,
        "Claim number 1 is accurate.": 2,  # the killed call, then the new run's
        "Claim number 2 is accurate.": 1,
    }
    results = JudgeResult.objects.all()
    assert sorted(results.values_list("item_id", flat=True)) == sorted(i.pk for i in items)
    assert set(results.values_list("run_id", flat=True)) == {again.pk}
    assert all(r.status == "ok" for r in results)


def test_a_real_worker_stores_replies_with_nul_bytes_and_the_run_ends(broker, stub):
    """A random model's NUL bytes crashed the batch's write on PostgreSQL: the batch's answers
    were lost and the run stayed running (issue 11)."""
    project = factories.ProjectFactory()
    factories.make_items(project, 6)
    judge = make_llm_judge(stub, project, concurrency=3, items_per_task=3)
    stub.responder = lambda request: (
        Reply(content="\x00garbage \udc80[]\x00")
        if claim_of(request) in ("Claim number 1 is accurate.", "Claim number 4 is accurate.")
        else Reply()
    )
    worker = start_worker(broker)
    try:
        run = services.judge_run_start(judge=judge, project=project)
        wait_for(
            lambda: run_status(run) == "done", timeout=60, what="the run to finish", worker=worker
        )
    finally:
        worker.stop()
    run.refresh_from_db()
    assert (run.answered_count, run.unparseable_count, run.failed_count) == (4, 2, 0)
    garbage = JudgeResult.objects.filter(run=run, status="unparseable")
    assert {r.raw for r in garbage} == {"garbage \ufffd[]"}
    assert {str(r.detail) for r in garbage} == {
        str({"raw_cleaned": {"nul": 2, "lone_surrogates": 1}})
    }


def test_a_budget_holds_across_a_real_worker_s_parallel_batches(broker, stub):
    """Several batches in two worker processes, four calls in flight each: the calls are
    reserved in the database, so exactly the budget is called and the rest is not run."""
    project = factories.ProjectFactory()
    factories.make_items(project, 12)
    stub.responder = lambda request: Reply(delay=0.05)
    judge = make_llm_judge(stub, project, concurrency=4, items_per_task=3)
    worker = start_worker(broker, concurrency=2)
    try:
        run = services.judge_run_start(judge=judge, project=project, budget_calls=7)
        wait_for(
            lambda: run_status(run) == "done", timeout=60, what="the run to finish", worker=worker
        )
    finally:
        worker.stop()
    run.refresh_from_db()
    assert len(stub.chat_requests()) == 7
    assert JudgeCall.objects.filter(run=run).count() == 7
    assert (run.answered_count, run.not_run_count, run.failed_count) == (7, 5, 0)
    assert run.calls_reserved == 7
