"""Processing one batch of a run: the body of the Celery task ``judge_batch``.

``judge_batch_process`` is idempotent: items that already have a result for the run's key are
skipped, and results are inserted with ON CONFLICT DO NOTHING, so a redelivered task (worker
killed, visibility timeout) or a re-run never stores a second result. The kind-specific
processors (``PROCESSORS``: LLM calls in threads, NLI and embedding scores in batches) share one
:class:`_Batch`, which buffers and stores the outcomes and notices a cancel.

Errors: a reply that cannot be parsed is stored as ``unparseable`` with the raw text (so is a
reply cut at ``max_tokens``, finish reason "length", unless it parses completely); a permanent
error (400, 422…) is stored per item as ``failed`` with the server's message; a transient one
(timeout, connection, 429, 5xx) sends the item back to the task, which retries it after
``backoff_seconds`` until ``max_attempts``; a fatal one (401, 403, 404, a refusal of the request
as a whole, missing API key or model) fails the whole run at once. The same permanent error on
the first ``REFUSED_ITEMS`` distinct items, before any reply came back, is a refusal of the
request as a whole too.

A server that cannot be reached (connection refused or reset) is a run-wide condition: the
first such error records ``unreachable_since`` on the run (the next reply clears it), the batch
makes no further call and sends its items back with the one that failed, and they are retried
with the backoff beyond ``max_attempts`` until the server has been unreachable for the judge's
``unreachable_wait`` (300 s: a server restart), then failed with the connection error. An item
whose retry the budget does not allow is failed with its last error, not "not run".

Every result records the run that produced it (``produced_by``) and an ``error_class``
(:data:`llm_judges.backends.llm.ERROR_CLASSES`, or unparseable, truncated, budget, time_limit,
prompt, internal) that the run page groups its problems by; a server's error body is kept only as
a sanitised excerpt for staff (``error_excerpt``).

Replies are stored as PostgreSQL can hold them: NUL characters and lone surrogates (which a
random model can produce) are removed from the raw reply and the answer, and counted in the
result's ``detail["raw_cleaned"]``.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, QuerySet
from django.utils import timezone
from rest_framework import serializers

from annotation.models import Item
from llm_judges import prompts
from llm_judges.backends import ConfigError, llm_backend
from llm_judges.backends import llm as llm_module
from llm_judges.backends.logprobs import answer_probability
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun, PromptTemplate
from llm_judges.parameters import clean_parameters
from llm_judges.services import budget as budgets
from llm_judges.services.configuration import _prompt_for, judge_connection
from llm_judges.services.errors import JudgeError
from llm_judges.services.prompt_templates import (
    shipped_template,
    template_messages,
    template_response_format,
)
from llm_judges.services.runs import _fail_run, _refresh_counts, judge_run_heartbeat
from llm_judges.services.safe_text import db_safe_text, db_safe_value

log = logging.getLogger(__name__)

Status = JudgeRun.Status
ResultStatus = JudgeResult.Status
STATUS_CHECK_SECONDS = 1.0
HEARTBEAT_SECONDS = 10.0  # how often a working batch records that its run is alive
FLUSH_SECONDS = 0.5
FLUSH_ROWS = 50
TIME_LIMIT_MESSAGE = "The task's time limit was reached before an answer came."
NO_OUTCOME_MESSAGE = "No outcome was recorded for this item (a bug: see the worker log)."
REFUSED_ITEMS = 3  # the same permanent error on this many distinct items, no reply: run-wide
TRUNCATED = 'the reply was cut at max_tokens (finish reason "length")'

Pending = tuple[Item, llm_module.CallOutcome]  # an item waiting for a retry, and its last call
Request = tuple[list[prompts.ChatMessage], dict | None]  # messages and the response_format


# --- outcome storage -----------------------------------------------------------------------------


def _results_of_key(run: JudgeRun, item_ids: Iterable[int]) -> QuerySet[JudgeResult]:
    return JudgeResult.objects.filter(
        judge_id=run.judge_id,
        prompt_version=run.prompt_version,
        setting=run.setting,
        presentation=run.presentation,
        item_id__in=item_ids,
    )


def _while_active(run: JudgeRun) -> Exists:
    return Exists(JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE))


def _claim(run: JudgeRun, item_ids: Iterable[int]) -> None:
    """Count the key's results for these items as the run's own, while it is active.

    Why: a result is unique per (item, judge, prompt version, setting), but a cancelled run's
    batch still writes the answer of a call that was in flight, possibly after a restart counted
    the item as pending; the run's counts (by run) would then never reach its total."""
    _results_of_key(run, item_ids).exclude(run_id=run.pk).filter(_while_active(run)).update(
        run_id=run.pk
    )


def _fail_unfinished(
    run: JudgeRun,
    item_ids: Iterable[int],
    *,
    message: str,
    attempt: int,
    error_class: str = "internal",
) -> list[int]:
    """Store ``message`` as the failed result of each of these items of the run's project that
    has no result for the run's key; only while the run is active (a cancelled run leaves its
    items unjudged). Returns the ids of the items it failed."""
    item_ids = list(item_ids)
    have = set(_results_of_key(run, item_ids).values_list("item_id", flat=True))
    missing = [item_id for item_id in item_ids if item_id not in have]
    if not missing or not JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE).exists():
        return []
    missing = list(
        Item.objects.filter(project_id=run.project_id, id__in=missing).values_list("id", flat=True)
    )
    with transaction.atomic():
        JudgeResult.objects.bulk_create(
            [
                JudgeResult(
                    item_id=item_id,
                    judge_id=run.judge_id,
                    prompt_version=run.prompt_version,
                    setting=run.setting,
                    presentation=run.presentation,
                    run_id=run.pk,
                    produced_by_id=run.pk,
                    status=ResultStatus.FAILED,
                    error=message[:4000],
                    error_class=error_class,
                    attempts=attempt + 1,
                )
                for item_id in missing
            ],
            ignore_conflicts=True,
        )
        _claim(run, missing)
    return missing


def judge_batch_give_up(
    *, run_id: int, item_ids: Sequence[int], attempt: int, message: str
) -> None:
    """Fail the items of a batch that cannot be retried (the broker refused the retry), so that
    the run still ends."""
    run = JudgeRun.objects.filter(pk=run_id).first()
    if run is None:
        return
    _fail_unfinished(run, item_ids, message=message, attempt=attempt)
    _refresh_counts(run_id)


# --- one batch -----------------------------------------------------------------------------------


@dataclass
class BatchReport:
    stored: int = 0
    retry_item_ids: list[int] = field(default_factory=list)
    countdown: float = 0.0
    stopped: str = ""  # why the batch stopped early, if it did


class _Uniform(Protocol):
    def uniform(self, a: float, b: float) -> float: ...


def backoff_seconds(
    *,
    attempt: int,
    base: float,
    cap: float,
    retry_after: float | None = None,
    rng: _Uniform = random,
) -> float:
    """Delay before retry ``attempt + 1``: exponential (base · 2^attempt, at most ``cap``) with
    "equal jitter" (half fixed, half random) so that a burst of 429s does not come back in step;
    never shorter than the server's Retry-After (capped)."""
    # 2**60 is beyond any cap: a run retried for long while its server is unreachable (many
    # attempts) must not overflow the float.
    ceiling = min(cap, base * 2 ** min(attempt, 60))
    delay = ceiling / 2 + rng.uniform(0, ceiling / 2)
    if retry_after:
        delay = max(delay, min(retry_after, cap))
    return delay


class _Batch:
    """State shared by the kind-specific processors of one batch."""

    def __init__(
        self,
        run: JudgeRun,
        prompt: prompts.JudgePrompt,
        parameters: dict,
        attempt: int,
        template: PromptTemplate,
    ):
        self.run = run
        self.judge = run.judge
        self.prompt = prompt
        self.template = template
        self.parameters = parameters
        self.attempt = attempt
        self.report = BatchReport()
        self._checked = time.monotonic()
        self._beat = time.monotonic()
        self._flushed = time.monotonic()
        self._results: list[JudgeResult] = []
        self._calls: list[JudgeCall] = []
        self.replied = False  # an LLM call of this batch had a reply
        self.refusals: dict[str, set[int]] = {}  # permanent error -> items that got it
        # The run's server was unreachable when the batch began, or became so during it.
        self.unreachable = run.unreachable_since is not None

    def key(self) -> dict:
        return {
            "judge_id": self.judge.pk,
            "prompt_version": self.run.prompt_version,
            "setting": self.run.setting,
            "presentation": self.run.presentation,
            "run_id": self.run.pk,
            "produced_by_id": self.run.pk,
        }

    def still_active(self, *, force: bool = False) -> bool:
        """Re-read the run's status at most once a second (cancel, fatal error elsewhere)."""
        now = time.monotonic()
        if not force and now - self._checked < STATUS_CHECK_SECONDS:
            return True
        self._checked = now
        if now - self._beat >= HEARTBEAT_SECONDS:
            self._beat = now
            judge_run_heartbeat(run_id=self.run.pk)
        status = JudgeRun.objects.filter(pk=self.run.pk).values_list("status", flat=True).first()
        if status not in JudgeRun.ACTIVE:
            self.report.stopped = f"run {status}"
            return False
        return True

    def store(self, results: list[JudgeResult], calls: Sequence[JudgeCall] = ()) -> None:
        with transaction.atomic():
            if calls:
                JudgeCall.objects.bulk_create(calls)
            if results:
                JudgeResult.objects.bulk_create(results, ignore_conflicts=True)
                # A cancelled run's late write may have won the conflict: count it as ours.
                _claim(self.run, [result.item_id for result in results])
        self.report.stored += len(results)

    def buffer(self, results: list[JudgeResult], calls: Sequence[JudgeCall] = ()) -> None:
        """Queue rows and write them in one transaction every ``FLUSH_SECONDS`` (or
        ``FLUSH_ROWS`` results): one round trip per few dozen calls instead of three per call,
        while progress still moves every half second. ``flush()`` before leaving."""
        self._results.extend(results)
        self._calls.extend(calls)
        now = time.monotonic()
        if len(self._results) >= FLUSH_ROWS or now - self._flushed >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        self._flushed = time.monotonic()
        if self._results or self._calls:
            # Cleared only once written: a write the soft time limit interrupts is written again
            # by the batch's last flush instead of losing answers already paid for.
            self.store(self._results, self._calls)
            self._results, self._calls = [], []

    def not_run(self, item: Item) -> JudgeResult:
        """The result of an item the run's budget left uncalled."""
        return JudgeResult(
            item=item,
            status=ResultStatus.NOT_RUN,
            error=budgets.NOT_RUN_MESSAGE,
            error_class="budget",
            attempts=self.attempt,
            **self.key(),
        )

    def failed(
        self, item: Item, message: str, *, error_class: str = "internal", **extra: Any
    ) -> JudgeResult:
        return JudgeResult(
            item=item,
            status=ResultStatus.FAILED,
            error=db_safe_text(text=message)[0][:4000],
            error_class=error_class,
            attempts=self.attempt + 1,
            **self.key(),
            **extra,
        )

    def became_unreachable(self) -> None:
        """A call found the server unreachable: say so on the run (once per outage)."""
        self.unreachable = True
        JudgeRun.objects.filter(pk=self.run.pk, unreachable_since__isnull=True).update(
            unreachable_since=timezone.now()
        )

    def reached(self) -> None:
        """A call had an answer from the server (a reply or an error status): it is reachable."""
        if self.unreachable:
            self.unreachable = False
            JudgeRun.objects.filter(pk=self.run.pk, unreachable_since__isnull=False).update(
                unreachable_since=None
            )


def judge_batch_process(*, run_id: int, item_ids: Sequence[int], attempt: int = 0) -> BatchReport:
    """Judge the given items of a run. Safe to call twice with the same arguments.

    While the run is active every item leaves with a result or in ``retry_item_ids``: an
    unexpected exception fails the items without a result (with the exception's text) and is
    raised again for the worker's log."""
    run = JudgeRun.objects.select_related("judge", "project").filter(pk=run_id).first()
    if run is None:
        return BatchReport(stopped="run deleted")
    if run.status not in JudgeRun.ACTIVE:
        return BatchReport(stopped=f"run {run.status}")
    if run.status == Status.PENDING:
        JudgeRun.objects.filter(pk=run.pk, status=Status.PENDING).update(
            status=Status.RUNNING, started_at=timezone.now()
        )
    judge_run_heartbeat(run_id=run.pk)
    try:
        report = _process_batch(run, item_ids, attempt)
    except Exception as exc:
        log.exception("judge run %s: a batch of %d items stopped", run.pk, len(item_ids))
        _record_stopped_batch(run, item_ids, attempt, exc)
        raise
    _refresh_counts(run.pk)
    return report


def _record_stopped_batch(
    run: JudgeRun, item_ids: Sequence[int], attempt: int, exc: Exception
) -> None:
    """Fail the items of a batch an exception stopped that have no result, with its text."""
    if isinstance(exc, _soft_time_limit()):
        message, error_class = TIME_LIMIT_MESSAGE, "time_limit"
    else:
        message = f"The batch stopped on an unexpected error: {type(exc).__name__}: {exc}"
        error_class = "internal"
    try:
        if not connection.in_atomic_block:
            # A connection the server dropped is closed here and reopened by the next query.
            connection.close_if_unusable_or_obsolete()
        _fail_unfinished(run, item_ids, message=message, attempt=attempt, error_class=error_class)
        _refresh_counts(run.pk)
    except Exception:  # the database itself may be gone; the first error is the one to see
        log.exception("judge run %s: could not record the batch's unfinished items", run.pk)


def _process_batch(run: JudgeRun, item_ids: Sequence[int], attempt: int) -> BatchReport:
    judge = run.judge
    items = _items_to_judge(run, item_ids)
    try:
        prompt = _prompt_for(judge, run.project)
        template = run.prompt or shipped_template(
            task_type=run.project.task_type, version=run.prompt_version
        )
        parameters = clean_parameters(judge.kind, judge.parameters)
        # Where an LLM judge's calls go is the endpoint's (staff's), checked for every batch.
        connection = judge_connection(judge=judge, project=run.project)
        if connection is not None:
            parameters = {**parameters, **(template.parameters or {}), **connection}
        batch = _Batch(run, prompt, parameters, attempt, template)
        if items:
            PROCESSORS[judge.kind](batch, items)
        report = batch.report
    except (ConfigError, JudgeError) as exc:
        _fail_run(run.pk, str(exc))
        return BatchReport(stopped=str(exc))
    except serializers.ValidationError as exc:
        _fail_run(run.pk, f"The judge's parameters are invalid: {exc.detail}")
        return BatchReport(stopped="invalid parameters")
    retry = set(report.retry_item_ids)
    time_limit = report.stopped == "time limit"
    forgotten = _fail_unfinished(
        run,
        [item.pk for item in items if item.pk not in retry],
        message=TIME_LIMIT_MESSAGE if time_limit else NO_OUTCOME_MESSAGE,
        attempt=attempt,
        error_class="time_limit" if time_limit else "internal",
    )
    if forgotten and not time_limit:
        log.error(
            "judge run %s: the %s processor left %d items without an outcome: %s",
            run.pk,
            judge.kind,
            len(forgotten),
            forgotten,
        )
    return report


def _items_to_judge(run: JudgeRun, item_ids: Sequence[int]) -> list[Item]:
    """The batch's items of the run's project that have no result of the run's key yet, in
    order (the key's results for them counted as the run's own)."""
    with transaction.atomic():
        # A failed result another run wrote for these items after this run started (a cancelled
        # run's soft limit) is retried, as starting the run retries failed results.
        _results_of_key(run, item_ids).filter(status=ResultStatus.FAILED).exclude(
            run_id=run.pk
        ).filter(_while_active(run)).delete()
        _claim(run, item_ids)
    done = _results_of_key(run, item_ids).values("item_id")
    items = list(
        Item.objects.filter(project_id=run.project_id, id__in=item_ids)
        .exclude(id__in=done)
        .order_by("position", "id")
    )
    for item in items:
        item.project = run.project  # prompts may read the project's config (e.g. criteria)
    return items


def _soft_time_limit() -> type[BaseException]:
    from celery.exceptions import SoftTimeLimitExceeded

    return SoftTimeLimitExceeded


# --- LLM judges ----------------------------------------------------------------------------------


def _process_llm(batch: _Batch, items: list[Item]) -> None:
    """Call the endpoint for each item, at most ``concurrency`` calls in flight (threads: the
    calls wait on the network, not the CPU). A new call starts only when one ends, so a fatal
    error or a cancel stops the batch after the calls already in flight."""
    backend = llm_backend(model=batch.judge.model, parameters=batch.parameters)
    meter = budgets.PromptMeter(tokenizer=batch.parameters.get("tokenizer", ""))
    waiting = _llm_requests(batch, items)
    transient = _call_llm(batch, backend, waiting, meter)
    if transient and batch.report.stopped == "budget":
        # A retry would be another call: the budget ends these items with their last error.
        batch.store(
            [
                batch.failed(
                    item,
                    f"{outcome.error} (no retry: the run's budget is reached)",
                    error_class=outcome.error_class,
                    error_excerpt=outcome.excerpt,
                )
                for item, outcome in transient
            ]
        )
    elif transient and not batch.report.stopped:
        _retry_or_give_up(batch, transient)


def _llm_requests(batch: _Batch, items: list[Item]) -> deque[tuple[Item, Request]]:
    """(item, call arguments) for each item; an item whose prompt cannot be built fails."""
    prompt, template = batch.prompt, batch.template
    presentation = batch.run.presentation  # ranking: "reversed" outputs
    waiting: deque[tuple[Item, Request]] = deque()
    for item in items:
        try:
            messages = template_messages(
                template=template, prompt=prompt, item=item, presentation=presentation
            )
            response_format = template_response_format(
                template=template, prompt=prompt, item=item, presentation=presentation
            )
            waiting.append((item, (messages, response_format)))
        except Exception as exc:  # a malformed item must not stop the batch
            batch.store(
                [batch.failed(item, f"Cannot build the prompt: {exc}", error_class="prompt")]
            )
    return waiting


class _Calls:
    """The calls of one batch: the items waiting, the calls in flight on a thread pool (at most
    ``concurrency``), each call's token reservation where the run has a budget."""

    def __init__(
        self,
        batch: _Batch,
        backend: llm_module.LLMBackend,
        waiting: deque[tuple[Item, Request]],
        meter: budgets.PromptMeter,
    ):
        self.batch, self.backend, self.waiting, self.meter = batch, backend, waiting, meter
        self.concurrency = batch.parameters["concurrency"]
        self.pool = ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(waiting))))
        self.in_flight: dict[Future, tuple[Item, Request]] = {}
        self.reserved: dict[Future, int] = {}
        self.transient: list[Pending] = []
        self.budgeted = batch.run.budget_calls is not None or batch.run.budget_tokens is not None

    def _submit(self, item: Item, request: Request, tokens: int) -> None:
        future = self.pool.submit(self.backend.call, *request)
        self.in_flight[future] = (item, request)
        self.reserved[future] = tokens

    def fill(self) -> None:
        """Start calls until ``concurrency`` are in flight (or the budget refuses one)."""
        if self.budgeted:
            self._fill_within_budget()
            return
        # Nothing to refuse: count the calls about to start in one UPDATE, then start them.
        starting = min(len(self.waiting), self.concurrency - len(self.in_flight))
        if self.batch.report.stopped or starting <= 0:
            return
        budgets.count_calls(run=self.batch.run, calls=starting)
        for _ in range(starting):
            self._submit(*self.waiting.popleft(), 0)

    def _fill_within_budget(self) -> None:
        batch, waiting = self.batch, self.waiting
        max_tokens = batch.parameters.get("max_tokens", 0)
        while waiting and len(self.in_flight) < self.concurrency and not batch.report.stopped:
            item, request = waiting.popleft()
            tokens = self.meter.prompt_tokens(messages=request[0]) + max_tokens
            if budgets.reserve_call(run=batch.run, tokens=tokens):
                self._submit(item, request, tokens)
                continue
            if self.in_flight:
                # Calls in flight may settle below their reservation: try again then.
                waiting.appendleft((item, request))
                return
            # The budget is reached: no call for this item nor the batch's others.
            late = [item, *(i for i, _ in waiting)]
            waiting.clear()
            batch.buffer(_not_run_or_failed(batch, late))
            batch.report.stopped = "budget"
            return

    def settle(self, future: Future) -> None:
        """Store a finished call's outcome and give back what its reservation did not use."""
        item, request = self.in_flight.pop(future)
        outcome = future.result()  # LLMBackend.call never raises
        budgets.settle_call(
            run=self.batch.run, reserved=self.reserved.pop(future), used=_tokens_used(outcome)
        )
        _settle_call(self.batch, item, outcome, self.transient, response_format=request[1])
        if outcome.error_class == "unreachable" and self.waiting:
            # No server to call: the items not called yet wait for the retry with it.
            self.transient.extend((i, outcome) for i, _ in self.waiting)
            self.waiting.clear()

    def unfinished(self) -> list[Item]:
        return [*(i for i, _ in self.in_flight.values()), *(i for i, _ in self.waiting)]


def _call_llm(
    batch: _Batch,
    backend: llm_module.LLMBackend,
    waiting: deque[tuple[Item, Request]],
    meter: budgets.PromptMeter,
) -> list[Pending]:
    """Make the waiting calls and store their outcomes; returns the items whose call failed
    with a transient error (and, once the server is unreachable, the items not called yet, with
    that error). The soft time limit fails every item without an outcome."""
    calls = _Calls(batch, backend, waiting, meter)
    try:
        calls.fill()
        while calls.in_flight:
            # Wake up at least every FLUSH_SECONDS: buffered rows reach the database and a
            # cancel is noticed even while every call in flight is slow.
            finished, _ = wait(calls.in_flight, timeout=FLUSH_SECONDS, return_when=FIRST_COMPLETED)
            if not finished:
                batch.buffer([])
            for future in finished:
                calls.settle(future)
            if not batch.report.stopped:
                batch.still_active()
            calls.fill()
    except _soft_time_limit():
        _fail_at_time_limit(batch, calls.unfinished(), calls.transient)
    finally:
        calls.pool.shutdown(wait=False, cancel_futures=True)
        batch.flush()
    return calls.transient


def _tokens_used(outcome: llm_module.CallOutcome) -> int | None:
    """The tokens a finished call used, for its budget: the server's count; none when it failed
    before the server did any work; unknown (None: the reservation stays) after a timeout or a
    reply without a count."""
    if outcome.prompt_tokens is not None or outcome.completion_tokens is not None:
        return (outcome.prompt_tokens or 0) + (outcome.completion_tokens or 0)
    if not outcome.ok and outcome.error_class != "timeout":
        return 0
    return None


def _not_run_or_failed(batch: _Batch, items: list[Item]) -> list[JudgeResult]:
    """Results for items the budget leaves uncalled: "not run: budget", or, in a retry batch
    (every item of it was sent back by an error), failed with the error that is why it is not
    answered: its own last call's, or, for an item that waited while the server could not be
    reached and was never called itself, the run's last connection error. Only items the run
    never tried are "not run: budget"."""
    if not batch.attempt:
        return [batch.not_run(item) for item in items]
    last: dict[int, JudgeCall] = {}
    calls = JudgeCall.objects.filter(run_id=batch.run.pk, item_id__in=[i.pk for i in items])
    for made in calls.order_by("attempt", "id"):
        last[made.item_id] = made
    unreachable = (
        JudgeCall.objects.filter(run_id=batch.run.pk, error_class="unreachable")
        .order_by("-id")
        .first()
    )
    results = []
    for item in items:
        call = last.get(item.pk, unreachable)
        if call is None:
            results.append(batch.not_run(item))
            continue
        results.append(
            batch.failed(
                item,
                f"{call.error} (no retry: the run's budget is reached)",
                error_class=call.error_class,
                error_excerpt=call.error_excerpt,
            )
        )
    return results


def _settle_call(
    batch: _Batch,
    item: Item,
    outcome: llm_module.CallOutcome,
    transient: list[Pending],
    *,
    response_format: dict | None = None,
) -> None:
    """Store a finished call; a transient error joins ``transient``, a fatal one (or the same
    permanent one on the first ``REFUSED_ITEMS`` items) fails the run and stops the batch."""
    if outcome.error_class == "unreachable":
        batch.became_unreachable()
    elif outcome.ok or outcome.http_status is not None:
        batch.reached()
    if outcome.error_kind == llm_module.PERMANENT and _refused_as_a_whole(batch, item, outcome):
        outcome = replace(
            outcome,
            error_kind=llm_module.FATAL,
            error=f"{outcome.error} (refused for the first {REFUSED_ITEMS} items alike)",
        )
    kind = _store_llm_outcome(batch, item, outcome, response_format=response_format)
    if kind == llm_module.TRANSIENT:
        transient.append((item, outcome))
    elif kind == llm_module.FATAL and not batch.report.stopped:
        batch.flush()  # the failing item's result counts in the run's figures
        _fail_run(
            batch.run.pk, f"{outcome.error} (item {item.external_id})", excerpt=outcome.excerpt
        )
        batch.report.stopped = outcome.error


def _refused_as_a_whole(batch: _Batch, item: Item, outcome: llm_module.CallOutcome) -> bool:
    """Whether this permanent error is the same one the server gave for ``REFUSED_ITEMS``
    distinct items while no call of the run has had a reply: the server refuses the request
    itself (a wrong parameter it describes in its own words), not these items."""
    if batch.replied or outcome.error_class == "prompt_too_long":
        return False
    # The server's own words (sanitised) tell one refusal from another.
    items = batch.refusals.setdefault(outcome.excerpt or outcome.error, set())
    items.add(item.pk)
    if len(items) < REFUSED_ITEMS:
        return False
    # Another batch of the run may have had replies: then it is about these items after all.
    replied = JudgeCall.objects.filter(
        run_id=batch.run.pk,
        outcome__in=[JudgeCall.Outcome.OK, JudgeCall.Outcome.UNPARSEABLE],
    ).exists()
    return not replied


def _fail_at_time_limit(batch: _Batch, late: list[Item], transient: list[Pending]) -> None:
    batch.report.stopped = "time limit"
    results = [batch.failed(i, TIME_LIMIT_MESSAGE, error_class="time_limit") for i in late]
    # Items waiting for a retry: a stopped batch returns no retry, so they end here too.
    results += [
        batch.failed(
            item,
            f"The task's time limit was reached before a retry; last error: {o.error}",
            error_class=o.error_class or "time_limit",
            error_excerpt=o.excerpt,
        )
        for item, o in transient
    ]
    batch.store(results)


def _retry_or_give_up(batch: _Batch, transient: list[Pending]) -> None:
    """Send the transiently failed items back to the task with a backoff, or fail them once
    ``max_attempts`` is reached. Items that found the server unreachable are retried beyond
    ``max_attempts`` until it has been unreachable for ``unreachable_wait`` seconds."""
    parameters = batch.parameters
    since = None
    if any(o.error_class == "unreachable" for _, o in transient):
        since = (
            JudgeRun.objects.filter(pk=batch.run.pk)
            .values_list("unreachable_since", flat=True)
            .first()
        )
    waited = (timezone.now() - since).total_seconds() if since else 0.0
    retry: list[Pending] = []
    give_up: list[JudgeResult] = []
    for item, outcome in transient:
        if outcome.error_class == "unreachable" and since is not None:
            if waited < parameters["unreachable_wait"]:
                retry.append((item, outcome))
                continue
            message = (
                f"Gave up: the server has been unreachable since {since:%Y-%m-%d %H:%M:%S} UTC "
                f"({waited:.0f} s, {batch.attempt + 1} attempts): {outcome.error}"
            )
        elif batch.attempt + 1 < parameters["max_attempts"]:
            retry.append((item, outcome))
            continue
        else:
            message = f"Gave up after {batch.attempt + 1} attempts: {outcome.error}"
        give_up.append(
            batch.failed(
                item, message, error_class=outcome.error_class, error_excerpt=outcome.excerpt
            )
        )
    if give_up:
        batch.store(give_up)
    if retry:
        batch.report.retry_item_ids = [item.pk for item, _ in retry]
        batch.report.countdown = backoff_seconds(
            attempt=batch.attempt,
            base=parameters["backoff_base"],
            cap=parameters["backoff_cap"],
            retry_after=max((o.retry_after or 0 for _, o in retry), default=None),
        )


def _reply_result(
    batch: _Batch,
    item: Item,
    outcome: llm_module.CallOutcome,
    *,
    seed: int | None,
    response_format: dict | None,
) -> tuple[JudgeResult, str]:
    """The result of a reply (parsed, or unparseable with why) and the call's outcome kind."""
    # Parsed as received (a reply with a NUL in it is not the clean JSON asked for), stored
    # as PostgreSQL can hold it.
    text, cleaned = db_safe_text(text=outcome.text or "")
    answer, error = None, ""
    try:
        answer = batch.prompt.parse_reply(
            outcome.text or "", item, presentation=batch.run.presentation
        )
        kind = JudgeCall.Outcome.OK
    except prompts.Unparseable as exc:
        kind, error = JudgeCall.Outcome.UNPARSEABLE, str(exc)
    except Exception as exc:  # a parser bug must not lose the reply: keep it, flag it
        log.exception("judge reply parser failed on item %s", item.pk)
        kind, error = JudgeCall.Outcome.UNPARSEABLE, f"parser error: {exc!r}"
    error_class = ""
    if answer is None:
        error_class = "unparseable"
        if outcome.finish_reason == "length":
            error, error_class = f"{TRUNCATED}: {error}", "truncated"
    answer, in_answer = db_safe_value(value=answer)
    error, _ = db_safe_text(text=error)
    detail: dict[str, Any] = {}
    probability = (
        answer_probability(text=outcome.text or "", tokens=outcome.tokens)
        if answer is not None
        else None
    )
    if probability is not None:
        detail["logprobs"] = probability
    if cleaned or in_answer:
        detail["raw_cleaned"] = {**cleaned, **{f"answer_{k}": n for k, n in in_answer.items()}}
    result = JudgeResult(
        item=item,
        status=ResultStatus.OK if answer is not None else ResultStatus.UNPARSEABLE,
        answer=answer,
        raw=text,
        detail=detail,
        error=error[:4000],
        error_class=error_class,
        finish_reason=outcome.finish_reason,
        schema_valid=prompts.matches_schema(outcome.text or "", response_format),
        seed=seed,
        attempts=batch.attempt + 1,
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        latency_ms=outcome.latency_ms,
        **batch.key(),
    )
    return result, kind


def _store_llm_outcome(
    batch: _Batch,
    item: Item,
    outcome: llm_module.CallOutcome,
    *,
    response_format: dict | None = None,
) -> str:
    """Store the call (always) and the result (unless the error is transient); returns the
    call's outcome kind."""
    result = None
    seed = batch.parameters.get("seed")
    error_text, _ = db_safe_text(text=outcome.error)
    excerpt, _ = db_safe_text(text=outcome.excerpt)
    if outcome.ok:
        batch.replied = True
        result, kind = _reply_result(
            batch, item, outcome, seed=seed, response_format=response_format
        )
    else:
        kind = outcome.error_kind
        if kind != llm_module.TRANSIENT:
            result = batch.failed(
                item,
                outcome.error,
                error_class=outcome.error_class,
                error_excerpt=excerpt,
                latency_ms=outcome.latency_ms,
                seed=seed,
            )
    call = JudgeCall(
        run_id=batch.run.pk,
        item=item,
        attempt=batch.attempt + 1,
        outcome=kind,
        http_status=outcome.http_status,
        finish_reason=outcome.finish_reason,
        error=error_text[:4000],
        error_class=outcome.error_class,
        error_excerpt=excerpt,
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        latency_ms=outcome.latency_ms,
    )
    batch.buffer([result] if result else [], [call])
    return kind


# --- NLI and embedding judges --------------------------------------------------------------------


def _chunks_by_pairs(
    items: list[Item], pairs: list[list[tuple[str, str]]], target: int
) -> Iterator[list[int]]:
    """Group consecutive items so that each group has about ``target`` pairs: large enough to
    batch well, small enough to store progress and notice a cancel often."""
    group: list[int] = []
    count = 0
    for index, item_pairs in enumerate(pairs):
        group.append(index)
        count += len(item_pairs)
        if count >= target:
            yield group
            group, count = [], 0
    if group:
        yield group


def _paired(batch: _Batch, items: list[Item]) -> tuple[list[list[tuple[str, str]]], list[Item]]:
    """Each item's text pairs, and the items that have them; an item whose texts cannot be
    paired is stored as failed with why."""
    pairs_of = batch.prompt.pairs
    assert pairs_of is not None  # the judge's kind was checked against the prompt's kinds
    all_pairs: list[list[tuple[str, str]]] = []
    usable: list[Item] = []
    for item in items:
        try:
            all_pairs.append(pairs_of(item, batch.run.prompt_version))
            usable.append(item)
        except Exception as exc:
            batch.store([batch.failed(item, f"Cannot pair the item's texts: {exc}")])
    return all_pairs, usable


def _process_scored(
    batch: _Batch,
    items: list[Item],
    score: Callable[[list[tuple[str, str]]], list],
    to_answer: Callable[[Item, list], dict],
    detail: Callable[[list], dict],
    *,
    raw: Callable[[list], str] | None = None,
) -> None:
    """Shared loop of the NLI and embedding judges: pair texts, score pairs in batches, answer.
    ``raw(scores)`` is stored as the reply (a seq2seq model's generated texts); ``to_answer``
    raising ``Unparseable`` stores the item as unparseable with its detail and reply."""
    all_pairs, usable = _paired(batch, items)
    settled: set[int] = set()
    try:
        for group in _chunks_by_pairs(usable, all_pairs, 4 * batch.parameters["batch_size"]):
            if not batch.still_active(force=True):
                return
            flat = [pair for index in group for pair in all_pairs[index]]
            started = time.perf_counter()
            scores = score(flat)
            per_pair_ms = (time.perf_counter() - started) * 1000 / max(len(flat), 1)
            results, offset = [], 0
            for index in group:
                item, count = usable[index], len(all_pairs[index])
                item_scores = scores[offset : offset + count]
                offset += count
                try:
                    answer = to_answer(item, item_scores)
                except prompts.Unparseable as exc:
                    results.append(
                        JudgeResult(
                            item=item,
                            status=ResultStatus.UNPARSEABLE,
                            answer=None,
                            raw=raw(item_scores) if raw else "",
                            error=str(exc)[:4000],
                            error_class="unparseable",
                            detail=detail(item_scores),
                            attempts=batch.attempt + 1,
                            latency_ms=round(per_pair_ms * count),
                            **batch.key(),
                        )
                    )
                    continue
                except Exception as exc:
                    results.append(batch.failed(item, f"Cannot read the scores: {exc}"))
                    continue
                results.append(
                    JudgeResult(
                        item=item,
                        status=ResultStatus.OK,
                        answer=answer,
                        raw=raw(item_scores) if raw else "",
                        detail=detail(item_scores),
                        attempts=batch.attempt + 1,
                        latency_ms=round(per_pair_ms * count),
                        **batch.key(),
                    )
                )
            batch.store(results)
            settled.update(usable[index].pk for index in group)
    except _soft_time_limit():
        batch.report.stopped = "time limit"
        late = [i for i in usable if i.pk not in settled]
        batch.store(
            [
                batch.failed(i, "The task's time limit was reached.", error_class="time_limit")
                for i in late
            ]
        )


def _process_nli(batch: _Batch, items: list[Item]) -> None:
    """Sequence classifiers and seq2seq models (:mod:`llm_judges.backends.nli`). A pair whose
    generated text the label mapping does not know makes its item unparseable, the texts kept."""
    from llm_judges.backends.nli import generated_texts, judge_pairs, load_nli_model

    parameters = batch.parameters
    model = load_nli_model(
        batch.judge.model,
        entailment_label=parameters["entailment_label"],
        model_type=parameters["model_type"],
    )
    from_nli = batch.prompt.from_nli
    assert from_nli is not None  # the judge's kind was checked against the prompt's kinds

    def to_answer(item: Item, judged: list[dict]) -> dict:
        unknown = [(i, record) for i, record in enumerate(judged) if record["label"] is None]
        if unknown:
            raise prompts.Unparseable(
                "Generated text not in the label mapping: "
                + "; ".join(f"pair {i}: {generated_texts([record])}" for i, record in unknown)
            )
        labels = [record["label"] for record in judged]
        probabilities = [
            record.get("forward", record).get("probabilities", {}) for record in judged
        ]
        return from_nli(item, labels, probabilities)

    _process_scored(
        batch,
        items,
        lambda pairs: judge_pairs(model, pairs, parameters),
        to_answer,
        lambda judged: {"pairs": judged},
        raw=generated_texts if model.model_type == "seq2seq" else None,
    )


def _process_embedding(batch: _Batch, items: list[Item]) -> None:
    """Cosine similarities; one vector cache per task, so each distinct text is encoded once."""
    from annotation.text.embeddings import VectorCache
    from llm_judges.backends.embedding import pair_similarities

    parameters = batch.parameters
    threshold = parameters["threshold"]
    cache = VectorCache(max_texts=settings.CONCORD_EMBEDDING_CACHE_TEXTS)
    from_similarity = batch.prompt.from_similarity
    assert from_similarity is not None  # the judge's kind was checked against the prompt's kinds
    _process_scored(
        batch,
        items,
        lambda pairs: pair_similarities(pairs, batch_size=parameters["batch_size"], cache=cache),
        lambda item, scores: from_similarity(item, scores, threshold),
        lambda scores: {"similarities": [round(s, 4) for s in scores], "threshold": threshold},
    )


PROCESSORS: dict[str, Callable[[_Batch, list[Item]], None]] = {
    "llm": _process_llm,
    "nli": _process_nli,
    "embedding": _process_embedding,
}
