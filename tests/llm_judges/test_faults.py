"""Judge runs that tell the truth under faults and budgets (issue 32), and a server's error body
kept from researchers (issue 24), against the stub chat-completions server through the real
openai client. The same faults with a real Celery worker, a killed worker and a server stopped
and restarted mid-run are in test_faults_worker.py."""

from __future__ import annotations

import json
import re
import socket
from datetime import timedelta
from math import ceil
from types import SimpleNamespace

from django.test import Client
from django.utils import timezone

from llm_judges import selectors, services
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from studies.services.exports import export_stream
from tests import factories
from tests.llm_judges.conftest import make_llm_judge, start
from tests.llm_judges.stub_llm import Reply, claim_of, completion_body
from tests.llm_judges.test_budget import _prompt_estimate
from tests.llm_judges.test_pages import page_client

Status = JudgeRun.Status
SECRET = "s3cr3t-admin-token-42"
ADMIN_PAGE = (
    "<html><head><title>500</title></head><body><h1>INTERNAL ADMIN PANEL</h1>"
    f"<p>secret={SECRET}</p><p>db=postgres://admin:hunter2@10.0.0.5/prod</p></body></html>"
)


def closed_port() -> int:
    """A local port nothing listens on: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def export(project, fmt: str) -> str:
    return "".join(export_stream(project=project, fmt=fmt, coders="judges"))


# --- issue 24: a server's error body -------------------------------------------------------------


def test_a_servers_error_page_is_never_shown_to_researchers_nor_exported(
    project, researcher, items, stub, api_key, django_capture_on_commit_callbacks
):
    stub.responder = lambda request: (
        Reply(status=500, raw_body=ADMIN_PAGE)
        if claim_of(request) == "Claim number 1 is accurate."
        else Reply()
    )
    judge = make_llm_judge(stub, project, max_attempts=1)
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert (run.status, run.answered_count, run.failed_count) == (Status.DONE, 4, 1)

    failed = JudgeResult.objects.get(run=run, status="failed")
    assert failed.error == "Gave up after 1 attempts: HTTP 500: server error"
    assert failed.error_class == "server_error"
    # staff keep a bounded, sanitised excerpt: no markup, no secret
    assert failed.error_excerpt.startswith("500 INTERNAL ADMIN PANEL secret=[redacted]")
    assert SECRET not in failed.error_excerpt and "hunter2" not in failed.error_excerpt
    call = JudgeCall.objects.get(run=run, item=failed.item)
    assert SECRET not in call.error + call.error_excerpt

    page = page_client(researcher).get(f"/p/{project.slug}/judges/runs/{run.pk}/")
    html = page.content.decode()
    assert "HTTP 500: server error" in html
    assert "INTERNAL ADMIN PANEL" not in html and SECRET not in html
    for fmt in ("jsonl", "csv"):
        exported = export(project, fmt)
        assert "HTTP 500: server error" in exported
        assert "INTERNAL ADMIN PANEL" not in exported and SECRET not in exported

    staff = factories.UserFactory(username="staff-viewer", is_staff=True)
    factories.MembershipFactory(project=project, user=staff, role="researcher")
    client = Client()
    client.force_login(staff)
    html = client.get(f"/p/{project.slug}/judges/runs/{run.pk}/").content.decode()
    assert "INTERNAL ADMIN PANEL secret=[redacted]" in html
    assert SECRET not in html


# --- item 3: refused connections under a budget --------------------------------------------------


def test_refused_connections_under_a_budget_fail_their_items_with_the_error_and_release_tokens(
    project, researcher, api_key, django_capture_on_commit_callbacks
):
    factories.make_items(project, 8)
    judge = make_llm_judge(
        SimpleNamespace(url=f"http://127.0.0.1:{closed_port()}/v1"),
        project,
        concurrency=2,
        items_per_task=8,
        backoff_base=0,
        unreachable_wait=600,
    )
    run = start(
        judge, project, django_capture_on_commit_callbacks, budget_calls=4, budget_tokens=10**6
    )

    # two calls per attempt (the batch stops calling once the server is unreachable), two
    # attempts, then the budget ends it: every item was tried (the six not called waited for
    # the server with the two that were), so every item fails with the connection error
    # (issue 27: they were counted "not run: budget", which hid the failure)
    assert JudgeCall.objects.filter(run=run).count() == 4
    assert set(JudgeCall.objects.filter(run=run).values_list("error_class", flat=True)) == {
        "unreachable"
    }
    assert (run.answered_count, run.failed_count, run.not_run_count) == (0, 8, 0)
    failed = JudgeResult.objects.filter(run=run, status="failed")
    assert {r.error_class for r in failed} == {"unreachable"}
    assert all("Connection refused" in r.error for r in failed)
    assert all(r.error.endswith("(no retry: the run's budget is reached)") for r in failed)
    # no item was answered: the run failed, saying why
    assert run.status == Status.FAILED
    assert run.error.startswith("Every item judged failed: the server has been unreachable since")
    assert "Connection refused" in run.error
    # refused calls used no tokens: nothing stays reserved
    assert (run.calls_reserved, run.tokens_reserved) == (4, 0)

    html = page_client(researcher).get(f"/p/{project.slug}/judges/runs/{run.pk}/").content
    html = html.decode()
    assert "Connection refused" in html
    assert '<td class="count">8</td>' in html and "not run: budget" not in html


def _refused_run(project, capture, **budget):
    judge = make_llm_judge(
        SimpleNamespace(url=f"http://127.0.0.1:{closed_port()}/v1"),
        project,
        name=f"refused-{len(budget)}",
        concurrency=1,
        max_attempts=4,
        backoff_base=0,
        unreachable_wait=0,
    )
    return start(judge, project, capture, **budget)


def test_a_budgeted_run_against_a_refusing_server_shows_its_failures_as_without_a_budget(
    project, researcher, api_key, django_capture_on_commit_callbacks
):
    """Issue 27, item 5: with a budget, the same run reported "0 failed · 3 not run: budget"
    (here: 1 failed, 2 not run) where without one it reported its 3 failures and why."""
    factories.make_items(project, 3)
    plain = _refused_run(project, django_capture_on_commit_callbacks)
    assert (plain.failed_count, plain.not_run_count) == (3, 0)
    JudgeResult.objects.all().delete()
    judge = make_llm_judge(
        SimpleNamespace(url=f"http://127.0.0.1:{closed_port()}/v1"),
        project,
        name="budgeted",
        concurrency=1,
        max_attempts=4,
        backoff_base=0,
        unreachable_wait=600,  # retried while the server is down, until the budget ends it
    )
    run = start(judge, project, django_capture_on_commit_callbacks, budget_calls=3)
    assert JudgeCall.objects.filter(run=run).count() == 3
    assert (run.answered_count, run.failed_count, run.not_run_count) == (0, 3, 0)
    failed = JudgeResult.objects.filter(run=run, status="failed")
    assert {r.error_class for r in failed} == {"unreachable"}
    assert all("Connection refused" in r.error for r in failed)
    page = page_client(researcher).get(f"/p/{project.slug}/judges/").content.decode()
    assert "3 failed" in page and "not run: budget" not in page
    detail = page_client(researcher).get(f"/p/{project.slug}/judges/runs/{run.pk}/")
    assert "Connection refused" in detail.content.decode()


def test_items_a_budget_never_reached_are_not_run_and_tried_items_keep_their_failure(
    project, api_key, stub, django_capture_on_commit_callbacks
):
    """Only the items the run never tried are "not run: budget"."""
    factories.make_items(project, 4)
    calls = []

    def first_fails(request):
        calls.append(1)
        return Reply(status=503) if len(calls) == 1 else Reply()

    stub.responder = first_fails
    judge = make_llm_judge(stub, project, concurrency=1)
    run = start(judge, project, django_capture_on_commit_callbacks, budget_calls=2)
    assert (run.answered_count, run.failed_count, run.not_run_count) == (1, 1, 2)
    assert "HTTP 503" in JudgeResult.objects.get(run=run, status="failed").error
    not_run = JudgeResult.objects.filter(run=run, status="not_run")
    assert not JudgeCall.objects.filter(item__in=not_run.values("item")).exists()


def test_the_backoff_never_overflows_after_many_attempts():
    # a run retried for long while its server is down reached attempt ~1,100 and crashed
    assert services.backoff_seconds(attempt=5000, base=0.5, cap=30) <= 30


# --- item 2: a token budget is "at most" ---------------------------------------------------------


def _counting_server(request: dict) -> Reply:
    """Counts prompt tokens as a real tokenizer with a chat template might: more than four
    characters per token (a third of the characters plus 30 for the template)."""
    chars = sum(len(m["content"]) for m in request["json"]["messages"])
    body = completion_body(
        '{"sentences": [2]}',
        model=request["json"]["model"],
        prompt_tokens=ceil(chars / 3) + 30,
        completion_tokens=7,
    )
    return Reply(body=body, delay=0.01)


def test_a_token_budget_holds_with_eight_calls_in_flight_by_the_servers_own_counts(
    project, stub, api_key, django_capture_on_commit_callbacks
):
    factories.make_items(project, 40)
    stub.responder = _counting_server
    judge = make_llm_judge(stub, project, concurrency=8, items_per_task=40, max_tokens=64)
    started_sample = services.judge_run_start_pending(
        judge=judge, project=project, filters={"external_ids": ["claim-0"]}, enqueue=False
    )
    sample = started_sample.run
    services.judge_batch_process(run_id=sample.pk, item_ids=started_sample.pending_item_ids)
    per_call = sum(JudgeCall.objects.filter(run=sample).values_list("prompt_tokens", flat=True))
    limit = 25 * (per_call + 7)  # room for about 25 of the 39 calls left

    run = start(judge, project, django_capture_on_commit_callbacks, budget_tokens=limit)

    calls = JudgeCall.objects.filter(run=run)
    used = sum(c.prompt_tokens + c.completion_tokens for c in calls)
    assert used <= limit  # the server's counts, not an estimate (22,341 of 20,000 before)
    assert run.tokens_reserved == used  # every reservation settled to the server's count
    assert calls.count() >= 10
    assert run.answered_count == calls.count() + 1  # and claim-0, which the sample answered
    assert run.not_run_count == 39 - calls.count()
    assert run.status == Status.DONE


def test_the_estimates_at_most_holds_against_the_servers_counts(
    project, stub, api_key, django_capture_on_commit_callbacks
):
    factories.make_items(project, 6)
    stub.responder = _counting_server
    judge = make_llm_judge(stub, project, concurrency=3, max_tokens=64)
    estimate = selectors.run_estimate(judge=judge, project=project)
    run = start(judge, project, django_capture_on_commit_callbacks)
    used = sum(c.prompt_tokens for c in JudgeCall.objects.filter(run=run))
    assert estimate["prompt_tokens"] < used  # "about": four characters per token
    assert used <= estimate["prompt_tokens_bound"]  # "at most" holds
    assert used + 6 * 64 <= estimate["max_tokens"]


# --- item 4: a server that stops answering -------------------------------------------------------


def test_a_server_that_dies_mid_run_is_retried_while_unreachable_then_the_run_says_so(
    project, researcher, stub, api_key, django_capture_on_commit_callbacks
):
    factories.make_items(project, 6)
    replies = []

    def dies_after_three(request):
        replies.append(1)
        return Reply() if len(replies) <= 3 else Reply(drop=True)

    stub.responder = dies_after_three
    judge = make_llm_judge(
        stub,
        project,
        concurrency=1,
        items_per_task=6,
        max_attempts=2,
        backoff_base=0.2,
        backoff_cap=0.4,
        unreachable_wait=1.0,
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert (run.answered_count, run.failed_count) == (3, 3)
    assert run.status == Status.DONE  # some items were answered
    failed = JudgeResult.objects.filter(run=run, status="failed")
    assert {r.error_class for r in failed} == {"unreachable"}
    assert all(r.error.startswith("Gave up: the server has been unreachable since") for r in failed)
    # retried beyond max_attempts (2) while unreachable, one probe call per attempt
    dead_calls = JudgeCall.objects.filter(run=run, error_class="unreachable")
    attempts = sorted(dead_calls.values_list("attempt", flat=True))
    assert len(attempts) > 2 and attempts == list(range(1, len(attempts) + 1))
    assert run.error.startswith("3 items failed: the server has been unreachable since")

    groups = selectors.run_problem_groups(run=run)
    assert [(g["error_class"], g["count"]) for g in groups] == [("unreachable", 3)]
    html = page_client(researcher).get(f"/p/{project.slug}/judges/runs/{run.pk}/").content
    assert b"server unreachable" in html and b'<td class="count">3</td>' in html


def test_a_run_whose_every_item_failed_ends_failed_with_its_problems_counted(
    project, stub, api_key, django_capture_on_commit_callbacks
):
    factories.make_items(project, 4)
    # a different message per item: not one refusal of the request as a whole
    stub.responder = lambda request: Reply(
        status=400, body={"error": {"message": f"cannot judge {claim_of(request)}"}}
    )
    judge = make_llm_judge(stub, project)
    run = start(judge, project, django_capture_on_commit_callbacks, budget_calls=3)
    assert (run.failed_count, run.not_run_count) == (3, 1)
    assert run.status == Status.FAILED
    assert run.error.startswith("Every item judged failed: 3 × request refused for this item")


# --- item 1: a lost run is flagged, then resumed by the periodic task ----------------------------


def test_a_silent_run_is_flagged_on_its_page_then_resumed_by_the_periodic_task(
    project, researcher, stub, api_key, settings, django_capture_on_commit_callbacks
):
    settings.CONCORD_JUDGE_STALE_AFTER_SECONDS = 60
    settings.CONCORD_JUDGE_LOST_AFTER_SECONDS = 300
    items = factories.make_items(project, 5)
    judge = make_llm_judge(stub, project)
    lost = services.judge_run_start(
        judge=judge, project=project, enqueue=False, budget_calls=10, started_by=researcher
    )
    # its batch judged two items (and made a third call the kill lost), then went silent
    services.judge_batch_process(run_id=lost.pk, item_ids=[i.pk for i in items[:2]])
    JudgeRun.objects.filter(pk=lost.pk).update(calls_reserved=3)
    JudgeRun.objects.filter(pk=lost.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=90))

    client = page_client(researcher)
    html = client.get(f"/p/{project.slug}/judges/runs/{lost.pk}/").content.decode()
    # 90 s, or a few more when the machine is slow between the update and the request
    assert re.search(r"No sign of life from this run's workers for 9\d s", html)
    assert '<span class="unrecorded">1</span> in flight' in html
    assert services.judge_runs_resume_lost() == []  # flagged, not yet lost

    JudgeRun.objects.filter(pk=lost.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=400))
    html = client.get(f"/p/{project.slug}/judges/runs/{lost.pk}/").content.decode()
    assert "It is lost" in html
    with django_capture_on_commit_callbacks(execute=True):
        (resumed,) = services.judge_runs_resume_lost()

    lost.refresh_from_db()
    run = JudgeRun.objects.get(pk=resumed.run_id)
    assert lost.status == Status.FAILED
    assert lost.error.startswith("Lost: no batch of this run showed a sign of life for 300 s")
    assert lost.error.endswith(f"Taken over automatically: resumed as run {run.pk}.")
    assert (run.status, run.answered_count, run.total) == (Status.DONE, 5, 5)
    assert run.started_by == researcher
    assert run.budget_calls == 10 - 3  # the budget it had left, the lost in-flight call spent
    results = JudgeResult.objects.filter(item__project=project)
    assert set(results.values_list("run_id", flat=True)) == {run.pk}
    produced = sorted(results.values_list("produced_by_id", flat=True))
    assert produced == [lost.pk] * 2 + [run.pk] * 3  # each keeps the run that produced it
    rows = [json.loads(line) for line in export(project, "jsonl").splitlines()]
    assert sorted(r["judge_run_id"] for r in rows) == produced
    assert services.judge_runs_resume_lost() == []
    # The audit log says the resume was automatic (no actor: not the researcher's press of
    # start), which run it took over and how many items were left (found by the outside probe).
    from projects.models import AuditEntry

    entry = AuditEntry.objects.filter(project=project, kind="judge_run_started").latest("id")
    assert entry.actor is None and entry.changes["resumes"] == lost.pk
    assert entry.summary == (
        f"Resumed the lost run {lost.pk} automatically as run {run.pk} of the judge "
        f"{judge.name}: 3 of its 5 items left to judge."
    )


def test_the_periodic_task_is_scheduled_and_registered(settings):
    from config.celery import app

    app.loader.import_default_modules()
    entry = settings.CELERY_BEAT_SCHEDULE["resume-lost-judge-runs"]
    assert entry["task"] in app.tasks
    assert entry["schedule"] == settings.CONCORD_JUDGE_RESUME_EVERY_SECONDS


# --- items 5 and 6: structured output reported apart; exports carry what results store ----------


def test_structured_output_is_reported_apart_and_exports_carry_each_results_record(
    project, researcher, stub, api_key, django_capture_on_commit_callbacks
):
    factories.make_items(project, 4)
    replies = {
        "Claim number 1 is accurate.": Reply(content='{"sentences": [', finish_reason="length"),
        "Claim number 2 is accurate.": Reply(content='{"sentences": [2]}\x00'),
        "Claim number 3 is accurate.": Reply(content='```json\n{"sentences": [2]}\n```'),
    }
    stub.responder = lambda request: replies.get(claim_of(request), Reply())
    judge = make_llm_judge(stub, project, seed=7)
    run = start(judge, project, django_capture_on_commit_callbacks)

    progress = selectors.progress_of(run=selectors.run_for_project(project=project, run_id=run.pk))
    assert progress["structured_output"] == "json_schema"  # what was sent
    assert progress["schema_honoured_by_server"] is None  # servers do not say
    assert (progress["schema_valid"], progress["truncated"], progress["complete_replies"]) == (
        1,
        1,
        3,
    )
    html = page_client(researcher).get(f"/p/{project.slug}/judges/runs/{run.pk}/").content
    html = html.decode()
    assert '<span class="schema-honoured">not reported</span>' in html
    assert '<span class="truncated-count">1</span>' in html
    assert '<span class="complete-replies">3</span>' in html

    rows = {r["item_id"]: r for r in map(json.loads, export(project, "jsonl").splitlines())}
    assert rows["claim-0"]["judge_finish_reason"] == "stop"
    assert rows["claim-0"]["judge_seed"] == 7
    assert rows["claim-0"]["judge_schema_valid"] is True
    assert rows["claim-0"]["judge_removed_nul"] == 0
    assert rows["claim-1"]["judge_finish_reason"] == "length"
    assert rows["claim-1"]["judge_error_class"] == "truncated"
    assert rows["claim-1"]["judge_schema_valid"] is False
    assert rows["claim-2"]["judge_removed_nul"] == 1
    assert rows["claim-3"]["judge_schema_valid"] is False
    assert {r["judge_run_id"] for r in rows.values()} == {run.pk}
    header = export(project, "csv").splitlines()[0].split(",")
    for column in ("judge_finish_reason", "judge_seed", "judge_schema_valid", "judge_removed_nul"):
        assert column in header


def test_with_the_models_tokenizer_a_budget_reserves_the_exact_prompt_count(
    project, stub, api_key, tmp_path, django_capture_on_commit_callbacks
):
    """A judge naming its model's tokenizer reserves the prompt as that tokenizer counts it
    with its chat template (plus a small margin), not the byte bound: a server counting with
    the same tokenizer fills the budget to within one call."""
    from transformers import AutoTokenizer

    from llm_judges.services import budget
    from tests.llm_judges.tiny_causal_lm import build_tiny_causal_lm

    directory = build_tiny_causal_lm(tmp_path / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)

    def counted(messages) -> int:
        ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        return len(ids["input_ids"] if isinstance(ids, dict) else ids)

    def server(request: dict) -> Reply:
        body = completion_body(
            '{"sentences": [2]}',
            model=request["json"]["model"],
            prompt_tokens=counted(request["json"]["messages"]),
            completion_tokens=7,
        )
        return Reply(body=body)

    items = factories.make_items(project, 10)
    stub.responder = server
    judge = make_llm_judge(stub, project, tokenizer=str(directory), max_tokens=16)
    estimate = selectors.run_estimate(judge=judge, project=project)
    assert "counted by the judge's tokenizer" in estimate["method"]
    exact = _prompt_estimate(project, items, count=lambda messages: counted(messages))
    assert estimate["prompt_tokens_bound"] == sum(exact) + 10 * budget.TOKENIZER_MARGIN
    bounds = _prompt_estimate(project, items, count=budget.bound_tokens)
    assert estimate["prompt_tokens_bound"] < sum(bounds) / 2

    limit = sum(n + budget.TOKENIZER_MARGIN + 16 for n in exact[:6])
    run = start(judge, project, django_capture_on_commit_callbacks, budget_tokens=limit)
    used = sum(c.prompt_tokens + c.completion_tokens for c in JudgeCall.objects.filter(run=run))
    assert used <= limit and run.tokens_reserved == used
    assert run.answered_count >= 6  # reserved at the exact count; the byte bound lets in fewer
    assert sum(b + 16 for b in bounds[:2]) > limit
