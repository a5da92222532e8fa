"""LLM judges against a real chat-completions HTTP server (the stub), through the real openai
client and the real services/Celery task (eager here; a real worker in test_worker.py)."""

import random

import pytest

from llm_judges import selectors, services
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from llm_judges.services import batch_engine
from tests import factories
from tests.llm_judges.conftest import API_KEY, make_llm_judge, start
from tests.llm_judges.stub_llm import Reply, claim_of, user_message


@pytest.fixture
def judge(stub, api_key, project):
    return make_llm_judge(stub, project)


def test_a_run_stores_one_parsed_answer_per_item_with_tokens_and_latency(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.total, run.answered_count, run.failed_count) == (5, 5, 0)
    results = JudgeResult.objects.filter(run=run)
    assert results.count() == 5
    for result in results:
        assert result.answer == {"sentences": [1], "none": False}  # reply "2" is 1-based
        assert result.raw == '{"sentences": [2]}'
        assert (result.prompt_tokens, result.completion_tokens) == (120, 7)
        assert result.latency_ms is not None
    calls = JudgeCall.objects.filter(run=run)
    assert calls.count() == 5
    assert set(calls.values_list("outcome", flat=True)) == {"ok"}
    assert selectors.judge_answers(project=project, judge=judge) == {
        item.external_id: {"sentences": [1], "none": False} for item in items
    }


def test_the_request_asks_for_a_json_schema_and_carries_the_configured_settings(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project, temperature=0.3, max_tokens=99)
    start(judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]})

    (request,) = stub.chat_requests()
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {API_KEY}"
    body = request["json"]
    assert body["model"] == "stub-model"
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 99
    schema_format = body["response_format"]
    assert schema_format["type"] == "json_schema"
    schema = schema_format["json_schema"]["schema"]
    assert schema["required"] == ["sentences"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["sentences"]["items"]["enum"] == [-1, 1, 2, 3, 4]
    text = user_message(request)
    assert "Evidence passage 2 of claim 0." in text  # the masked evidence
    assert "Evidence passage 3 of claim 0." not in text  # only the masked one
    assert "1. Sentence 1 of explanation 0 [1]." in text
    assert "2. Sentence 2 of explanation 0." in text  # its marker [2] was masked
    assert "-1" in text
    assert body["messages"][0]["role"] == "system"


def test_structured_output_can_be_switched_off_for_servers_without_it(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project, structured_output=False)
    start(judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]})
    assert "response_format" not in stub.chat_requests()[0]["json"]


def test_an_unparseable_reply_is_stored_with_its_raw_text_and_counted(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    def responder(request):
        if claim_of(request) == "Claim number 3 is accurate.":
            return Reply(content="I believe the second sentence cites it.")
        if claim_of(request) == "Claim number 4 is accurate.":
            return Reply(content='{"sentences": [9]}')  # no such sentence
        return Reply()

    stub.responder = responder
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.unparseable_count, run.failed_count) == (3, 2, 0)
    prose = JudgeResult.objects.get(item__external_id="claim-3")
    assert prose.status == JudgeResult.Status.UNPARSEABLE
    assert prose.raw == "I believe the second sentence cites it."
    assert prose.answer is None
    assert "neither JSON" in prose.error
    out_of_range = JudgeResult.objects.get(item__external_id="claim-4")
    assert out_of_range.status == JudgeResult.Status.UNPARSEABLE
    assert "sentence 9 does not exist" in out_of_range.error
    assert "claim-3" not in selectors.judge_answers(project=project, judge=judge)
    assert selectors.judge_result_counts(project=project, judge=judge) == {
        "answered": 3,
        "unparseable": 2,
        "failed": 0,
        "missing": 0,
    }


def test_a_503_is_retried_and_the_second_answer_is_stored(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    seen = []

    def responder(request):
        seen.append(claim_of(request))
        return Reply(status=503) if len(seen) == 1 else Reply()

    stub.responder = responder
    run = start(
        judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]}
    )

    assert run.status == JudgeRun.Status.DONE
    assert len(stub.chat_requests()) == 2  # our retry, not the SDK's (max_retries=0)
    result = JudgeResult.objects.get(run=run)
    assert result.status == JudgeResult.Status.OK
    assert result.attempts == 2
    outcomes = list(
        JudgeCall.objects.filter(run=run).order_by("attempt").values_list("outcome", "http_status")
    )
    assert outcomes == [("transient", 503), ("ok", 200)]


def test_a_call_that_times_out_is_retried_then_recorded_as_failed(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project, timeout=0.3, max_attempts=2)
    stub.responder = lambda request: Reply(delay=1.5)
    run = start(
        judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]}
    )

    # its only item failed: the run failed, and says why (issue 32)
    assert run.status == JudgeRun.Status.FAILED
    assert run.error == (
        "Every item judged failed: 1 × timed out (e.g. Gave up after 2 attempts: timed out "
        "after 0.3 s)"
    )
    assert run.failed_count == 1
    result = JudgeResult.objects.get(run=run)
    assert result.status == JudgeResult.Status.FAILED
    assert result.error == "Gave up after 2 attempts: timed out after 0.3 s"
    assert result.error_class == "timeout"
    assert len(stub.chat_requests()) == 2
    assert (
        list(JudgeCall.objects.filter(run=run).values_list("outcome", flat=True))
        == ["transient"] * 2
    )


def test_a_401_fails_the_run_fast_without_calling_for_the_other_items(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    stub.responder = lambda request: Reply(status=401)
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.FAILED
    assert "HTTP 401" in run.error
    assert len(stub.chat_requests()) == 1  # no retry, no further item
    (result,) = JudgeResult.objects.filter(run=run)
    assert result.status == JudgeResult.Status.FAILED
    assert "HTTP 401" in result.error
    assert JudgeCall.objects.get(run=run).outcome == "fatal"


def test_a_400_fails_only_its_item_and_the_others_are_answered(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    stub.responder = lambda request: (
        Reply(status=400) if claim_of(request) == "Claim number 1 is accurate." else Reply()
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.failed_count) == (4, 1)
    failed = JudgeResult.objects.get(status=JudgeResult.Status.FAILED)
    assert failed.item.external_id == "claim-1"
    assert failed.error.startswith("HTTP 400")
    assert len(stub.chat_requests()) == 5  # permanent: never retried


def test_a_missing_api_key_fails_the_run_with_a_message_naming_the_variable(
    project, items, stub, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.delenv("STUB_LLM_API_KEY", raising=False)
    judge = make_llm_judge(stub, project)
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert run.status == JudgeRun.Status.FAILED
    assert "STUB_LLM_API_KEY" in run.error
    assert stub.chat_requests() == []


def test_running_again_neither_duplicates_nor_calls_again_for_answered_items(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    first = start(judge, project, django_capture_on_commit_callbacks)
    second = start(judge, project, django_capture_on_commit_callbacks)

    assert len(stub.chat_requests()) == 5
    assert JudgeResult.objects.count() == 5
    assert second.status == JudgeRun.Status.DONE
    assert second.answered_count == 5  # it claims the existing answers
    first.refresh_from_db()
    assert first.answered_count == 5  # the first run's figures stay as they were


def test_running_again_retries_only_the_failed_items(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    stub.responder = lambda request: (
        Reply(status=400) if claim_of(request) == "Claim number 1 is accurate." else Reply()
    )
    start(judge, project, django_capture_on_commit_callbacks)
    stub.responder = lambda request: Reply()
    calls_before = len(stub.chat_requests())

    again = start(judge, project, django_capture_on_commit_callbacks)

    assert [claim_of(r) for r in stub.chat_requests()[calls_before:]] == [
        "Claim number 1 is accurate."
    ]
    assert again.answered_count == 5
    assert JudgeResult.objects.count() == 5


def test_processing_the_same_batch_twice_stores_each_result_once(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    """What a redelivered Celery task does: the same (run, items) arrive again."""
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    ids = [item.pk for item in items]
    services.judge_batch_process(run_id=run.pk, item_ids=ids)
    services.judge_batch_process(run_id=run.pk, item_ids=ids)
    assert JudgeResult.objects.count() == 5
    assert len(stub.chat_requests()) == 5


def test_the_database_refuses_a_second_result_for_the_same_key(project, items, judge):
    from django.db import IntegrityError, transaction

    JudgeResult.objects.create(
        item=items[0], judge=judge, prompt_version="v1", setting="sample", status="ok"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgeResult.objects.create(
            item=items[0], judge=judge, prompt_version="v1", setting="sample", status="failed"
        )


def test_a_second_run_is_refused_while_one_is_active(project, items, judge):
    services.judge_run_start(judge=judge, project=project, enqueue=False)
    with pytest.raises(services.JudgeError, match="already running"):
        services.judge_run_start(judge=judge, project=project, enqueue=False)


def test_a_run_cancelled_during_a_call_stops_before_the_next_item(
    transactional_db, stub, api_key, monkeypatch
):
    project = factories.ProjectFactory()
    items = factories.make_items(project, 5)
    monkeypatch.setattr(batch_engine, "STATUS_CHECK_SECONDS", 0)
    judge = make_llm_judge(stub, project, concurrency=1)
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)

    def responder(request):
        if len(stub.chat_requests()) == 2:  # a researcher cancels during the second call
            from django.db import connection

            services.judge_run_cancel(run=run)
            connection.close()
        return Reply()

    stub.responder = responder
    report = services.judge_batch_process(run_id=run.pk, item_ids=[i.pk for i in items])

    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED
    assert report.stopped == "run cancelled"
    assert len(stub.chat_requests()) == 2
    assert JudgeResult.objects.count() == 2  # the call in flight is still recorded


def test_a_task_of_a_cancelled_run_exits_without_calling(project, items, judge, stub):
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    services.judge_run_cancel(run=run)
    report = services.judge_batch_process(run_id=run.pk, item_ids=[i.pk for i in items])
    assert report.stopped == "run cancelled"
    assert stub.chat_requests() == []


def test_a_run_covers_only_the_filtered_items(
    project, stub, api_key, django_capture_on_commit_callbacks
):
    factories.make_items(project, 3)
    factories.make_items(project, 2, kind="control", start=3)
    judge = make_llm_judge(stub, project)
    run = start(judge, project, django_capture_on_commit_callbacks, filters={"kind": ["control"]})
    assert run.total == 2
    assert sorted(JudgeResult.objects.values_list("item__external_id", flat=True)) == [
        "claim-3",
        "claim-4",
    ]


def test_an_invalid_filter_is_refused_with_its_field(project, items, judge):
    with pytest.raises(services.JudgeError, match="kind"):
        services.judge_run_start(
            judge=judge, project=project, filters={"kind": ["gold"]}, enqueue=False
        )


def test_backoff_grows_exponentially_with_jitter_and_honours_retry_after():
    rng = random.Random(1)
    delays = [services.backoff_seconds(attempt=n, base=2, cap=60, rng=rng) for n in range(6)]
    for n, delay in enumerate(delays):
        ceiling = min(60, 2 * 2**n)
        assert ceiling / 2 <= delay <= ceiling
    assert len({round(d, 6) for d in delays}) == 6  # jittered, not in lock step
    assert services.backoff_seconds(attempt=0, base=2, cap=60, retry_after=30, rng=rng) == 30
    assert services.backoff_seconds(attempt=0, base=2, cap=60, retry_after=999, rng=rng) == 60


def test_429_retry_after_sets_the_retry_countdown(project, items, judge, stub):
    stub.responder = lambda request: Reply(status=429, headers={"Retry-After": "7"})
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    report = services.judge_batch_process(run_id=run.pk, item_ids=[items[0].pk])
    assert report.retry_item_ids == [items[0].pk]
    assert report.countdown == 7
    assert not JudgeResult.objects.exists()  # transient: nothing stored until it gives up


def test_the_runs_list_costs_the_same_queries_however_many_runs(
    project, items, stub, api_key, django_assert_max_num_queries
):
    for n in range(6):
        judge = make_llm_judge(stub, project, name=f"judge-{n}")
        run = services.judge_run_start(judge=judge, project=project, enqueue=False)
        services.judge_batch_process(run_id=run.pk, item_ids=[items[0].pk])
    with django_assert_max_num_queries(1):
        runs = [selectors.progress_of(run=r) for r in selectors.runs_for_project(project=project)]
    assert len(runs) == 6
    assert all(r["answered"] == 1 for r in runs)
