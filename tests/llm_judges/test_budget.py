"""Cost control: the estimate before a run, a budget of calls or tokens that stops a run at its
limit against the stub chat-completions server (nothing beyond it is called, the items left are
"not run: budget"), and the usage per run on the judges page."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from llm_judges import selectors, services
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from llm_judges.services import budget
from llm_judges.services.prompt_templates import template_messages
from tests.conftest import client_for
from tests.llm_judges.conftest import make_llm_judge, start
from tests.llm_judges.stub_llm import Reply
from tests.llm_judges.test_pages import page_client

PROMPT_TOKENS, COMPLETION_TOKENS = 120, 7  # what the stub reports for every call


@pytest.fixture
def judge(stub, api_key, project):
    return make_llm_judge(stub, project, max_tokens=64)


def _prompt_estimate(project, items, *, count=budget.estimate_tokens) -> list[int]:
    from llm_judges import prompts

    template = services.shipped_template(task_type=project.task_type)
    prompt = prompts.get(project.task_type)
    for item in items:
        item.project = project
    return [
        count(messages=template_messages(template=template, prompt=prompt, item=item))
        for item in items
    ]


def test_the_estimate_counts_calls_and_tokens_before_anything_is_called(
    project, items, judge, stub
):
    estimate = selectors.run_estimate(judge=judge, project=project)
    expected = sum(_prompt_estimate(project, items))
    bound = sum(_prompt_estimate(project, items, count=budget.bound_tokens))
    assert (estimate["items"], estimate["to_judge"], estimate["calls"]) == (5, 5, 5)
    assert estimate["prompt_tokens"] == expected > 5 * 50
    # "at most" is a bound (one token per byte), not the estimate (issue 32)
    assert estimate["prompt_tokens_bound"] == bound > 3 * expected
    assert estimate["max_completion_tokens"] == 5 * 64
    assert estimate["max_tokens"] == bound + 5 * 64
    assert "4 characters per token" in estimate["method"]
    assert "one token per UTF-8 byte" in estimate["method"]
    assert stub.chat_requests() == []  # an estimate calls nothing
    assert not JudgeRun.objects.exists()
    filtered = selectors.run_estimate(
        judge=judge, project=project, filters={"external_ids": ["claim-0", "claim-1"]}
    )
    assert (filtered["items"], filtered["calls"]) == (2, 2)


def test_the_estimate_leaves_out_items_already_answered(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    start(judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]})
    estimate = selectors.run_estimate(judge=judge, project=project)
    assert (estimate["items"], estimate["to_judge"], estimate["calls"]) == (5, 4, 4)


def test_the_estimate_api_command_and_page_say_the_same(project, researcher, items, judge):
    url = f"/api/projects/{project.slug}/judge-runs/estimate/"
    api = client_for(researcher)
    data = api.post(url, {"judge": judge.name}, format="json").json()
    assert (data["calls"], data["max_completion_tokens"]) == (5, 320)
    refused = api.post(url, {"judge": "nope"}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "judge"
    bad = api.post(url, {"judge": judge.name, "filters": {"kinds": ["x"]}}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "filters.kinds"
    both = api.post(url, {"judge": judge.name, "both_orders": True}, format="json")
    assert both.status_code == 400 and both.json()["field"] == "both_orders"
    # The same body as a start: a bad budget is refused here too (found by the outside probe).
    for limit in ({"budget_calls": "x"}, {"budget_calls": -1}, {"budget_tokens": 10**30}):
        bad = api.post(url, {"judge": judge.name, **limit}, format="json")
        assert bad.status_code == 400 and bad.json()["field"] == next(iter(limit))

    out = io.StringIO()
    call_command("run_judge", project=project.slug, judge=judge.name, estimate=True, stdout=out)
    text = out.getvalue()
    assert "calls: 5" in text and f"input tokens (estimated): {data['prompt_tokens']}" in text
    assert not JudgeRun.objects.exists()

    page = page_client(researcher).post(
        f"/p/{project.slug}/judges/", {"action": "estimate", "judge": judge.pk}
    )
    html = page.content.decode()
    assert '<span class="calls">5</span> calls' in html
    assert f'<span class="prompt-tokens">{data["prompt_tokens"]}</span>' in html
    assert not JudgeRun.objects.exists()


def test_a_call_budget_stops_the_run_at_the_limit_and_nothing_beyond_is_called(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    # several batches and several calls in flight: the limit holds across them
    judge = make_llm_judge(stub, project, items_per_task=2, concurrency=2)
    run = start(judge, project, django_capture_on_commit_callbacks, budget_calls=3)

    assert len(stub.chat_requests()) == 3
    assert JudgeCall.objects.filter(run=run).count() == 3
    assert (run.status, run.answered_count, run.not_run_count) == ("done", 3, 2)
    not_run = JudgeResult.objects.filter(run=run, status=JudgeResult.Status.NOT_RUN)
    assert not_run.count() == 2
    assert set(not_run.values_list("error", flat=True)) == {"not run: budget"}
    assert not_run.filter(prompt_tokens__isnull=False).count() == 0
    progress = selectors.progress_of(run=selectors.run_for_project(project=project, run_id=run.pk))
    assert (progress["not_run"], progress["budget_reached"], progress["remaining"]) == (2, True, 0)
    assert progress["usage"] == {
        "calls": 3,
        "calls_started": 3,
        "calls_unrecorded": 0,
        "input_tokens": 3 * PROMPT_TOKENS,
        "output_tokens": 3 * COMPLETION_TOKENS,
    }
    # "not run" items are missing, not answers; a later run without a budget judges them
    assert len(selectors.judge_answers(project=project, judge=judge)) == 3
    again = start(judge, project, django_capture_on_commit_callbacks)
    assert len(stub.chat_requests()) == 5
    assert (again.answered_count, again.not_run_count) == (5, 0)


def test_retries_count_against_the_budget(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    calls = []

    def flaky(request):
        calls.append(1)
        return Reply(status=503) if len(calls) == 1 else Reply()

    stub.responder = flaky
    judge = make_llm_judge(stub, project)
    run = start(judge, project, django_capture_on_commit_callbacks, budget_calls=2)
    assert len(stub.chat_requests()) == 2  # the 503 and the next item; no retry, nothing more
    assert (run.answered_count, run.not_run_count, run.failed_count) == (1, 3, 1)
    # the item whose retry the budget does not allow keeps its error (issue 32)
    failed = JudgeResult.objects.get(run=run, status="failed")
    assert failed.error == "HTTP 503: server error (no retry: the run's budget is reached)"
    assert failed.error_class == "server_error"


def test_a_token_budget_reserves_each_call_before_it_is_made(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    bounds = _prompt_estimate(project, list(items), count=budget.bound_tokens)
    reserve = [b + 64 for b in bounds]  # prompt bound + max_tokens
    used = PROMPT_TOKENS + COMPLETION_TOKENS
    # room for two calls (their server counts) and the third's reservation, minus one token
    limit = 2 * used + reserve[2] - 1
    assert reserve[0] <= limit and used + reserve[1] <= limit
    run = start(judge, project, django_capture_on_commit_callbacks, budget_tokens=limit)
    assert len(stub.chat_requests()) == 2
    assert (run.answered_count, run.not_run_count, run.status) == (2, 3, "done")
    run.refresh_from_db()
    assert run.tokens_reserved == 2 * used <= limit  # estimates replaced by the server's counts


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"budget_calls": 0}, "budget_calls"),
        ({"budget_calls": "many"}, "budget_calls"),
        ({"budget_tokens": -5}, "budget_tokens"),
    ],
)
def test_a_bad_budget_is_a_400_naming_the_field(project, researcher, items, judge, body, field):
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/judge-runs/", {"judge": judge.name, **body}, format="json"
    )
    assert response.status_code == 400 and response.json()["field"] == field
    assert not JudgeRun.objects.exists()


def test_a_budget_is_for_llm_judges_only(project, items):
    nli = services.judge_create(project=project, name="n", kind="nli", model="/tmp/none")
    with pytest.raises(services.JudgeError, match="LLM judges only") as refused:
        services.judge_run_start(judge=nli, project=project, budget_calls=3, enqueue=False)
    assert refused.value.field == "budget_calls"


def test_the_judges_page_starts_a_run_with_a_budget_and_shows_its_usage(
    project, researcher, items, judge, stub, django_capture_on_commit_callbacks
):
    client = page_client(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/p/{project.slug}/judges/", {"action": "start", "judge": judge.pk, "budget_calls": 2}
        )
    assert response.status_code == 302
    run = JudgeRun.objects.get()
    assert (run.budget_calls, run.answered_count, run.not_run_count) == (2, 2, 3)
    page = client.get(f"/p/{project.slug}/judges/").content.decode()
    assert f"2 calls · {2 * PROMPT_TOKENS} input / {2 * COMPLETION_TOKENS} output tokens" in page
    assert "3 not run: budget" in page
    assert "budget 2 calls" in page

    out = io.StringIO()
    call_command("run_judge", project=project.slug, judge=judge.name, budget_calls=1, stdout=out)
    assert "Usage: 1 call," in out.getvalue() and "2 items not run: budget" in out.getvalue()


def test_the_run_list_reads_usage_in_a_constant_number_of_queries(
    project,
    researcher,
    items,
    judge,
    django_capture_on_commit_callbacks,
    django_assert_max_num_queries,
):
    api = client_for(researcher)
    url = f"/api/projects/{project.slug}/judge-runs/"
    start(judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]})
    with django_assert_max_num_queries(50) as one:
        assert len(api.get(url).json()["results"]) == 1
    for item_id in ("claim-1", "claim-2", "claim-3"):
        start(
            judge, project, django_capture_on_commit_callbacks, filters={"external_ids": [item_id]}
        )
    with django_assert_max_num_queries(len(one.captured_queries)):
        runs = api.get(url).json()["results"]
    assert len(runs) == 4
    assert [r["usage"]["calls"] for r in runs] == [1, 1, 1, 1]
    detail = page_client(researcher).get(f"/p/{project.slug}/judges/runs/{runs[0]['id']}/")
    assert runs[0]["prompt_fingerprint"] in detail.content.decode()
