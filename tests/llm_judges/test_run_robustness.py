"""A judge run always ends: every item of a batch gets an outcome (or goes back to be retried),
whatever stops the batch — the task's soft time limit, a cancel and restart while a call is in
flight, an exception in a call thread, a database error, or a retry the broker refuses — so the
run's counts reach its total and a new start of the judge is never refused as "already running".
"""

import threading

import pytest
from celery.canvas import Signature
from celery.exceptions import Reject, SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError, connection

from llm_judges import services
from llm_judges.backends import llm as llm_module
from llm_judges.celery_tasks import judge_batch
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from llm_judges.services import batch_engine
from tests import factories
from tests.conftest import require
from tests.llm_judges.conftest import make_llm_judge
from tests.llm_judges.stub_llm import Reply, claim_of

TIME_LIMIT = "The task's time limit was reached before an answer came."


def outcomes(run) -> dict[str, tuple[str, str]]:
    return {
        r.item.external_id: (r.status, r.error)
        for r in JudgeResult.objects.filter(run=run).select_related("item")
    }


def test_a_soft_time_limit_while_an_item_waits_to_retry_fails_it_and_the_run_ends(
    project, stub, api_key, monkeypatch
):
    items = factories.make_items(project, 2)
    judge = make_llm_judge(stub, project, concurrency=2)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    hang = threading.Event()

    def responder(request):
        if claim_of(request) == "Claim number 0 is accurate.":
            return Reply(status=503)  # transient: waits for a retry
        return Reply(wait=hang)  # still in flight when the limit arrives

    stub.responder = responder
    real_wait = batch_engine.wait
    calls = {"n": 0}

    def wait_then_hit_the_soft_limit(fs, timeout=None, return_when=None):
        calls["n"] += 1
        done, pending = real_wait(fs, timeout=timeout, return_when=return_when)
        if calls["n"] >= 3 and not done:
            raise SoftTimeLimitExceeded()
        return done, pending

    monkeypatch.setattr(batch_engine, "wait", wait_then_hit_the_soft_limit)
    try:
        report = services.judge_batch_process(run_id=run.pk, item_ids=[i.pk for i in items])
    finally:
        hang.set()

    run.refresh_from_db()
    assert report.stopped == "time limit"
    assert report.retry_item_ids == []
    assert run.status == JudgeRun.Status.FAILED  # it ended; no item answered
    assert (run.total, run.failed_count) == (2, 2)
    found = outcomes(run)
    assert found["claim-1"] == ("failed", TIME_LIMIT)
    status, error = found["claim-0"]
    assert status == "failed"
    assert error.startswith(
        "The task's time limit was reached before a retry; last error: HTTP 503"
    )
    services.judge_run_start(judge=judge, project=project, enqueue=False)  # not "already running"


def test_a_soft_time_limit_during_a_write_keeps_the_buffered_answers_and_the_run_ends(
    project, stub, api_key, monkeypatch
):
    """The limit can arrive while buffered answers are being written: they are written again by
    the batch's last flush instead of being lost with no outcome."""
    items = factories.make_items(project, 3)
    judge = make_llm_judge(stub, project, concurrency=1)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    monkeypatch.setattr(batch_engine, "FLUSH_ROWS", 1)  # write after every answer
    real_store = batch_engine._Batch.store
    hits = {"n": 0}

    def store_hit_by_the_limit_once(self, results, calls=()):
        hits["n"] += 1
        if hits["n"] == 2:
            raise SoftTimeLimitExceeded()
        return real_store(self, results, calls)

    monkeypatch.setattr(batch_engine._Batch, "store", store_hit_by_the_limit_once)
    report = services.judge_batch_process(run_id=run.pk, item_ids=[i.pk for i in items])

    run.refresh_from_db()
    assert report.stopped == "time limit"
    assert run.status == JudgeRun.Status.DONE
    found = outcomes(run)
    assert [found[f"claim-{n}"][0] for n in range(3)] == ["ok", "ok", "failed"]
    assert found["claim-2"] == ("failed", TIME_LIMIT)


def test_restarting_a_cancelled_run_while_its_call_is_in_flight_completes_the_new_run(
    transactional_db, stub, api_key, monkeypatch
):
    project = factories.ProjectFactory()
    items = factories.make_items(project, 4)
    monkeypatch.setattr(batch_engine, "STATUS_CHECK_SECONDS", 0)
    # Answers wait in the buffer until the batch ends, however slow the machine: the old
    # batch's first two answers are still unwritten when the researcher restarts.
    monkeypatch.setattr(batch_engine, "FLUSH_SECONDS", 3600)
    judge = make_llm_judge(stub, project, concurrency=1)
    run1 = services.judge_run_start(judge=judge, project=project, enqueue=False)
    box = {}

    def responder(request):
        if len(stub.chat_requests()) == 2 and "run2" not in box:
            services.judge_run_cancel(run=run1)  # a researcher cancels ...
            box["run2"] = services.judge_run_start_pending(
                judge=judge, project=project, enqueue=False
            )
            connection.close()  # ... and restarts, while the old batch still waits on this call
        return Reply()

    stub.responder = responder
    services.judge_batch_process(run_id=run1.pk, item_ids=[i.pk for i in items])
    run2, pending = box["run2"].run, box["run2"].pending_item_ids
    assert len(pending) == 4  # the old batch's two answers were not written yet
    services.judge_batch_process(run_id=run2.pk, item_ids=pending)

    run2.refresh_from_db()
    assert run2.status == JudgeRun.Status.DONE
    assert (run2.total, run2.answered_count, run2.failed_count) == (4, 4, 0)
    assert JudgeResult.objects.count() == 4  # one per item: the old answers were not asked again
    assert set(JudgeResult.objects.values_list("run_id", flat=True)) == {run2.pk}
    assert len(stub.chat_requests()) == 4


def test_an_answer_the_cancelled_run_writes_while_the_new_run_calls_for_it_counts_for_the_new_run(
    transactional_db, stub, api_key
):
    """The old batch's write lands between the new batch's check and its own write: the new
    answer is not stored twice (unique per key), and the stored one counts for the new run."""
    project = factories.ProjectFactory()
    items = factories.make_items(project, 3)
    judge = make_llm_judge(stub, project, concurrency=1)
    run1 = services.judge_run_start(judge=judge, project=project, enqueue=False)
    services.judge_run_cancel(run=run1)
    started_run2 = services.judge_run_start_pending(judge=judge, project=project, enqueue=False)
    run2 = started_run2.run
    late = items[1]

    def responder(request):
        if claim_of(request) == "Claim number 1 is accurate.":
            JudgeResult.objects.create(
                item=late,
                judge=judge,
                prompt_version=run1.prompt_version,
                setting=run1.setting,
                run=run1,
                status=JudgeResult.Status.OK,
                answer={"sentences": [0], "none": False},
                raw='{"sentences": [1]}',
            )
            connection.close()
        return Reply()

    stub.responder = responder
    services.judge_batch_process(run_id=run2.pk, item_ids=started_run2.pending_item_ids)

    run2.refresh_from_db()
    assert run2.status == JudgeRun.Status.DONE
    assert (run2.answered_count, run2.failed_count) == (3, 0)
    assert JudgeResult.objects.count() == 3
    kept = JudgeResult.objects.get(item=late)
    assert (kept.run_id, kept.raw) == (run2.pk, '{"sentences": [1]}')  # the first write stays


def test_a_failure_the_cancelled_run_writes_after_the_restart_is_retried_by_the_new_run(
    project, stub, api_key
):
    items = factories.make_items(project, 3)
    judge = make_llm_judge(stub, project)
    run1 = services.judge_run_start(judge=judge, project=project, enqueue=False)
    services.judge_run_cancel(run=run1)
    started_run2 = services.judge_run_start_pending(judge=judge, project=project, enqueue=False)
    run2 = started_run2.run
    JudgeResult.objects.create(  # the old batch's soft limit, written after run2 started
        item=items[0],
        judge=judge,
        prompt_version=run1.prompt_version,
        setting=run1.setting,
        run=run1,
        status=JudgeResult.Status.FAILED,
        error=TIME_LIMIT,
    )

    services.judge_batch_process(run_id=run2.pk, item_ids=started_run2.pending_item_ids)

    run2.refresh_from_db()
    assert run2.status == JudgeRun.Status.DONE
    assert (run2.answered_count, run2.failed_count) == (3, 0)
    assert JudgeResult.objects.get(item=items[0]).run_id == run2.pk
    assert len(stub.chat_requests()) == 3


def test_an_exception_in_a_call_thread_fails_the_batchs_unfinished_items_and_is_raised(
    project, stub, api_key, monkeypatch
):
    factories.make_items(project, 3)
    judge = make_llm_judge(stub, project, concurrency=1)
    started_run = services.judge_run_start_pending(judge=judge, project=project, enqueue=False)
    run = started_run.run
    real_call = llm_module.LLMBackend.call

    def call_that_breaks_on_the_second_item(self, messages, response_format=None):
        if "Claim number 1" in str(messages):
            raise RuntimeError("boom in the call thread")
        return real_call(self, messages, response_format)

    monkeypatch.setattr(llm_module.LLMBackend, "call", call_that_breaks_on_the_second_item)
    with pytest.raises(RuntimeError, match="boom in the call thread"):
        services.judge_batch_process(run_id=run.pk, item_ids=started_run.pending_item_ids)

    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.failed_count) == (1, 2)
    found = outcomes(run)
    assert found["claim-0"][0] == "ok"
    message = "The batch stopped on an unexpected error: RuntimeError: boom in the call thread"
    assert found["claim-1"] == ("failed", message)
    assert found["claim-2"] == ("failed", message)
    again = services.judge_run_start_pending(judge=judge, project=project, enqueue=False)
    assert len(again.pending_item_ids) == 2  # not "already running"; the failed items are retried


def test_a_database_error_while_writing_fails_the_unwritten_items_with_its_text(
    project, stub, api_key, monkeypatch
):
    factories.make_items(project, 3)
    judge = make_llm_judge(stub, project, concurrency=1)
    started_run = services.judge_run_start_pending(judge=judge, project=project, enqueue=False)
    run = started_run.run
    monkeypatch.setattr(batch_engine, "FLUSH_ROWS", 1)
    real_bulk_create = JudgeCall.objects.bulk_create

    def bulk_create_that_fails(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(JudgeCall.objects, "bulk_create", bulk_create_that_fails)
    with pytest.raises(OperationalError):
        services.judge_batch_process(run_id=run.pk, item_ids=started_run.pending_item_ids)
    monkeypatch.setattr(JudgeCall.objects, "bulk_create", real_bulk_create)

    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED  # it ended; no item answered
    assert run.failed_count == 3
    assert set(JudgeResult.objects.values_list("error", flat=True)) == {
        "The batch stopped on an unexpected error: "
        "OperationalError: server closed the connection unexpectedly"
    }


def test_a_connection_the_database_server_drops_mid_batch_is_reopened_to_fail_the_items(
    transactional_db, stub, api_key, monkeypatch
):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    # The first query on the dead connection is the status check, outside any transaction
    # (Django's atomic() already closes a connection whose rollback fails).
    monkeypatch.setattr(batch_engine, "STATUS_CHECK_SECONDS", 0)
    monkeypatch.setattr(batch_engine, "FLUSH_SECONDS", 60)
    project = factories.ProjectFactory()
    factories.make_items(project, 3)
    judge = make_llm_judge(stub, project, concurrency=1)
    started_run = services.judge_run_start_pending(judge=judge, project=project, enqueue=False)
    run = started_run.run
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (worker_pid,) = cursor.fetchone()

    def responder(request):
        if claim_of(request) == "Claim number 1 is accurate.":  # the server restarts, say
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [worker_pid])
            connection.close()
        return Reply()

    stub.responder = responder
    with pytest.raises((OperationalError, InterfaceError)):
        services.judge_batch_process(run_id=run.pk, item_ids=started_run.pending_item_ids)

    run.refresh_from_db()
    found = outcomes(run)
    assert found["claim-2"][0] == "failed"
    assert found["claim-2"][1].startswith("The batch stopped on an unexpected error: ")
    # The run ends: done if any item was answered, else failed with its problems (issue 32).
    answered = [key for key, (status, _) in found.items() if status == "ok"]
    expected = JudgeRun.Status.DONE if answered else JudgeRun.Status.FAILED
    assert run.status == expected, run.error


def test_a_soft_time_limit_outside_the_calls_fails_the_batchs_items_and_is_raised(
    project, stub, api_key, monkeypatch
):
    factories.make_items(project, 2)
    judge = make_llm_judge(stub, project)
    started_run = services.judge_run_start_pending(judge=judge, project=project, enqueue=False)
    run = started_run.run

    def backend_hit_by_the_limit(**kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(batch_engine, "llm_backend", backend_hit_by_the_limit)
    with pytest.raises(SoftTimeLimitExceeded):
        services.judge_batch_process(run_id=run.pk, item_ids=started_run.pending_item_ids)

    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED  # it ended; no item answered
    assert set(outcomes(run).values()) == {("failed", TIME_LIMIT)}


def test_an_item_a_processor_leaves_without_outcome_is_failed_and_the_run_ends(
    project, stub, api_key, monkeypatch, caplog
):
    items = factories.make_items(project, 3)
    judge = make_llm_judge(stub, project)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)

    def forgets_all_but_the_first(batch, batch_items):
        batch.store([batch.failed(batch_items[0], "judged")])

    monkeypatch.setitem(batch_engine.PROCESSORS, "llm", forgets_all_but_the_first)
    services.judge_batch_process(run_id=run.pk, item_ids=[i.pk for i in items])

    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED  # it ended; no item answered
    assert run.failed_count == 3
    assert outcomes(run)["claim-2"] == (
        "failed",
        "No outcome was recorded for this item (a bug: see the worker log).",
    )
    assert "left 2 items without an outcome" in caplog.text


def test_a_cancelled_runs_unfinished_items_are_left_without_outcome(project, stub, api_key):
    """The safety net above applies only to active runs: a cancel leaves items unjudged."""
    items = factories.make_items(project, 3)
    judge = make_llm_judge(stub, project)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    services.judge_run_cancel(run=run)
    services.judge_batch_process(run_id=run.pk, item_ids=[i.pk for i in items])
    assert JudgeResult.objects.count() == 0


def test_starting_again_finishes_a_run_whose_every_item_has_an_outcome(project, stub, api_key):
    """Its last batch stored every outcome, then died before marking the run done."""
    items = factories.make_items(project, 2)
    judge = make_llm_judge(stub, project)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    for item in items:
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version=run.prompt_version,
            setting=run.setting,
            run=run,
            status=JudgeResult.Status.OK,
            answer={"sentences": [], "none": True},
        )

    again = services.judge_run_start(judge=judge, project=project, enqueue=False)

    run.refresh_from_db()
    assert (run.status, run.answered_count) == (JudgeRun.Status.DONE, 2)
    assert again.status == JudgeRun.Status.DONE  # nothing left to judge; it claims both answers


def test_cancelling_a_run_whose_every_item_has_an_outcome_marks_it_done(project, stub, api_key):
    items = factories.make_items(project, 1)
    judge = make_llm_judge(stub, project)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    JudgeResult.objects.create(
        item=items[0],
        judge=judge,
        prompt_version=run.prompt_version,
        setting=run.setting,
        run=run,
        status=JudgeResult.Status.OK,
        answer={"sentences": [], "none": True},
    )

    assert services.judge_run_cancel(run=run) is False  # it had already ended
    assert run.status == JudgeRun.Status.DONE


def test_a_retry_the_broker_refuses_fails_its_items_so_the_run_ends(
    project, stub, api_key, monkeypatch
):
    items = factories.make_items(project, 2)
    judge = make_llm_judge(stub, project)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    stub.responder = lambda request: Reply(status=503)

    def broker_unreachable(self, *args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(Signature, "apply_async", broker_unreachable)
    ids = [i.pk for i in items]
    # As a worker runs it: neither eager nor called directly, so the retry goes to the broker.
    judge_batch.push_request(
        id="task-1",
        args=[run.pk, ids],
        kwargs={},
        called_directly=False,
        is_eager=False,
        delivery_info={},
    )
    try:
        with pytest.raises(Reject):
            judge_batch.run(run.pk, ids)
    finally:
        judge_batch.pop_request()

    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED  # it ended; no item answered
    assert run.failed_count == 2
    assert set(JudgeResult.objects.values_list("error", flat=True)) == {
        "Could not queue the retry after a transient error: "
        "Error 111 connecting to 127.0.0.1:6379. Connection refused."
    }
    assert JudgeCall.objects.filter(run=run, outcome="transient").count() == 2
