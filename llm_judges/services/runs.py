"""Starting, cancelling, finishing and resuming judge runs: the filters that select a run's items,
the enqueueing of its batches, the counts copied onto the run (a run whose every item has an
outcome is done, or failed when no item was answered), and the periodic takeover of lost runs
(``judge_runs_resume_lost``)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, TypedDict, Unpack

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, DateTimeField, Q, QuerySet, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from rest_framework import serializers

from annotation.models import Item
from core.background import in_background
from core.wording import indefinite
from llm_judges.backends.errors import ConfigError
from llm_judges.models import Judge, JudgeResult, JudgeRun, PromptTemplate
from llm_judges.parameters import clean_parameters, judge_settings, settings_fingerprint
from llm_judges.services.configuration import _prompt_for, judge_connection
from llm_judges.services.errors import JudgeError
from llm_judges.services.prompt_templates import template_for
from llm_judges.services.safe_text import db_safe_text
from llm_judges.services.sampling import sampling_weights_after_run
from projects.audit import AuditKind, audit_record
from webhooks import events as webhook_events
from webhooks.services import event_emit

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from projects.models import Project

log = logging.getLogger(__name__)

Status = JudgeRun.Status
ResultStatus = JudgeResult.Status


class RunFilters(serializers.Serializer):
    """Which items of the project a run covers; no filter means all items."""

    kind = serializers.ListField(
        child=serializers.ChoiceField(choices=Item.Kind.choices), required=False, allow_empty=True
    )
    group = serializers.CharField(required=False, allow_blank=True, max_length=200)
    external_ids = serializers.ListField(
        child=serializers.CharField(max_length=255), required=False, allow_empty=True
    )


class RunFilterValues(TypedDict, total=False):
    """A run's filters as validated (``clean_filters``), empty ones left out; stored on the run."""

    kind: list[str]  # item kinds (Item.Kind)
    group: str
    external_ids: list[str]


def clean_filters(*, filters: dict | None) -> RunFilterValues:
    """The run filters, validated (``JudgeError`` naming the first bad one), empty ones left
    out."""
    if filters is not None and not isinstance(filters, dict):
        raise JudgeError("Filters must be an object.", field="filters")
    unknown = sorted(set(filters or {}) - set(RunFilters().fields))
    if unknown:
        # A typo must not widen a (costly) run to the whole project.
        known = ", ".join(RunFilters().fields)
        raise JudgeError(
            f"Unknown filter {', '.join(map(repr, unknown))}; known filters: {known}.",
            field=f"filters.{unknown[0]}",
        )
    serializer = RunFilters(data=filters or {})
    if not serializer.is_valid():
        from core.errors import first_error

        where, message = first_error(serializer.errors)
        raise JudgeError(
            f"Filter {where}: {message}", field=f"filters.{where}" if where else "filters"
        )
    cleaned = {k: v for k, v in serializer.validated_data.items() if v not in ([], "")}
    return RunFilterValues(**cleaned)


def _selection(project: Project, filters: RunFilterValues) -> QuerySet[Item]:
    items = Item.objects.filter(project=project)
    if filters.get("kind"):
        items = items.filter(kind__in=filters["kind"])
    if filters.get("group"):
        items = items.filter(group=filters["group"])
    if filters.get("external_ids"):
        items = items.filter(external_id__in=filters["external_ids"])
    return items


def _budget_number(name: str, value: int | float | str | None) -> int | None:
    if value in (None, ""):
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(value)
        if number != float(value):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise JudgeError(f"{name} must be a whole number.", field=name) from None
    if number < 1:
        raise JudgeError(f"{name} must be at least 1.", field=name)
    if number > 2**31 - 1:
        raise JudgeError(f"{name} is too large.", field=name)
    return number


class RunBudget(TypedDict):
    """A run's budget (``JudgeRun`` fields of these names): None for no limit."""

    budget_calls: int | None
    budget_tokens: int | None


def clean_budget(
    *,
    judge: Judge,
    budget_calls: int | float | str | None = None,
    budget_tokens: int | float | str | None = None,
) -> RunBudget:
    """The run's budget: whole numbers of at least 1, or None (no limit); LLM judges only."""
    budget = RunBudget(
        budget_calls=_budget_number("budget_calls", budget_calls),
        budget_tokens=_budget_number("budget_tokens", budget_tokens),
    )
    if judge.kind != Judge.Kind.LLM and any(v is not None for v in budget.values()):
        raise JudgeError(
            "A budget of calls or tokens applies to LLM judges only (NLI and embedding judges "
            "run on the workers, without calls).",
            field="budget_calls" if budget["budget_calls"] is not None else "budget_tokens",
        )
    return budget


class StartOptions(TypedDict, total=False):
    """The options of a start beside the judge, the project and the presentation."""

    started_by: User | None
    filters: dict | None
    enqueue: bool
    budget_calls: int | float | str | None
    budget_tokens: int | float | str | None


@dataclass(frozen=True)
class StartedRun:
    """A run just started and the ids of the items it left to judge, in order (a caller that
    does not enqueue them processes them in ``batches``)."""

    run: JudgeRun
    pending_item_ids: list[int]


def judge_run_start_both_orders(
    *, judge: Judge, project: Project, **options: Unpack[StartOptions]
) -> list[JudgeRun]:
    """``judge_run_start_both_orders_pending``, the runs only."""
    started = judge_run_start_both_orders_pending(judge=judge, project=project, **options)
    return [s.run for s in started]


def judge_run_start_both_orders_pending(
    *,
    judge: Judge,
    project: Project,
    started_by: User | None = None,
    filters: dict | None = None,
    enqueue: bool = True,
    budget_calls: int | float | str | None = None,
    budget_tokens: int | float | str | None = None,
) -> list[StartedRun]:
    """Position bias: the run as annotators see the items and, beside it, a run with every
    item in each of the task type's other presentations (ranking: the outputs reversed). Each
    run has its own budget. Refused when the task type has no other presentation."""
    prompt = _prompt_for(judge, project)
    if not prompt.presentations:
        raise JudgeError(
            f"{project.task_type} items have no other presentation to judge them in.",
            field="both_orders",
        )
    start = functools.partial(
        judge_run_start_pending,
        judge=judge,
        project=project,
        started_by=started_by,
        filters=filters,
        enqueue=enqueue,
        budget_calls=budget_calls,
        budget_tokens=budget_tokens,
    )
    with transaction.atomic():
        return [start(), *(start(presentation=p) for p in prompt.presentations)]


def judge_run_start(
    *, judge: Judge, project: Project, presentation: str = "", **options: Unpack[StartOptions]
) -> JudgeRun:
    """``judge_run_start_pending``, the run only."""
    return judge_run_start_pending(
        judge=judge, project=project, presentation=presentation, **options
    ).run


def judge_run_start_pending(
    *,
    judge: Judge,
    project: Project,
    started_by: User | None = None,
    filters: dict | None = None,
    enqueue: bool = True,
    presentation: str = "",
    budget_calls: int | float | str | None = None,
    budget_tokens: int | float | str | None = None,
    resumes: int | None = None,
) -> StartedRun:
    """Start a run of ``judge`` over the project's items (or the filtered part); returns it with
    the ids of the items left to judge. ``resumes``: the lost run this one takes over
    automatically (:func:`judge_runs_resume_lost`; its audit entry says so, with no actor).

    The run records the prompt template it renders (``template_for``: the judge's own, or the
    task type's shipped record) and its fingerprint; its batches render that template however
    the judge changes later. ``presentation`` judges the items in another presentation (one of
    the task type's ``presentations``: ranking "reversed"); its results are kept apart. A
    budget (``budget_calls``, ``budget_tokens``) stops the run cleanly when reached: the items
    left get the result "not run: budget".

    Items that already have an answer (ok or unparseable) for this judge, prompt version and
    setting are not judged again: the run claims those results and counts them as done. Failed
    results of the selection are deleted and retried. With ``enqueue`` the batches go to Celery
    once the transaction commits; without it the caller processes them (``run_judge`` does in
    eager mode, to show progress between batches).

    Refused (``JudgeError``) when the judge cannot run on the project or its parameters or the
    filters are invalid (code ``"invalid"``), and while it is already running on the project
    with the same prompt version and setting (code ``"conflict"``) — unless that run is lost (no
    sign of life from its batches for ``CONCORD_JUDGE_LOST_AFTER_SECONDS``): then it is ended as
    failed and this run takes over, claiming its results and queueing the items it left
    unfinished (this is how a run is resumed after its worker was killed or Redis lost the
    queue).
    """
    prompt = _prompt_for(judge, project)
    parameters = _valid_parameters(judge)
    try:
        judge_connection(judge=judge, project=project)
    except ConfigError as exc:
        raise JudgeError(str(exc), field="judge") from None
    cleaned = clean_filters(filters=filters)
    budget = clean_budget(judge=judge, budget_calls=budget_calls, budget_tokens=budget_tokens)
    _check_presentation_and_prompt(judge, project, prompt, presentation)
    template = template_for(judge=judge, project=project)
    setting = prompt.setting(project.config or {})
    with transaction.atomic():
        selection = _selection(project, cleaned)
        _refuse_while_running(judge, project, setting, template.key, presentation)
        run = _create_run(
            judge,
            project,
            template=template,
            setting=setting,
            presentation=presentation,
            budget=budget,
            filters=cleaned,
            parameters=parameters,
            selection=selection,
            started_by=started_by,
        )
        pending = _adopt_existing_results(run, selection)
        _audit_started(run, started_by, resumes=resumes, left=len(pending))
        if not pending:
            _refresh_counts(run.pk)
        elif enqueue:
            transaction.on_commit(
                partial(
                    in_background,
                    partial(_enqueue, run.pk, pending, run.items_per_task, _processes(judge)),
                    name=f"judge-run-{run.pk}",
                )
            )
    run.refresh_from_db()
    return StartedRun(run=run, pending_item_ids=pending)


def _audit_started(
    run: JudgeRun, started_by: User | None, *, resumes: int | None, left: int
) -> None:
    """The audit entry of a start: by its starter; a lost run taken over automatically by no
    one, saying which run it resumes and how many of its items were left to judge."""
    items = f"{run.total} item{'' if run.total == 1 else 's'}"
    presentation = f" ({run.presentation})" if run.presentation else ""
    summary = f"Started run {run.pk} of the judge {run.judge.name} over {items}{presentation}."
    changes = {"run": run.pk, "judge": run.judge.name, "prompt_version": run.prompt_version}
    if resumes is not None:
        summary = (
            f"Resumed the lost run {resumes} automatically as run {run.pk} of the judge "
            f"{run.judge.name}{presentation}: {left} of its {items} left to judge."
        )
        changes["resumes"] = resumes
    audit_record(
        project=run.project,
        actor=None if resumes is not None else started_by,
        kind=AuditKind.JUDGE_RUN_STARTED,
        summary=summary,
        changes=changes,
    )


def _check_presentation_and_prompt(judge: Judge, project: Project, prompt, presentation: str):
    if presentation and presentation not in prompt.presentations:
        known = ", ".join(prompt.presentations) or "none"
        raise JudgeError(
            f"{project.task_type} items have no presentation {presentation!r} (other "
            f"presentations: {known}).",
            field="presentation",
        )
    if judge.prompt_id is not None and judge.kind != Judge.Kind.LLM:
        raise JudgeError(
            f"{judge.name} is {indefinite(judge.kind)} judge: prompt templates are for LLM judges.",
            field="judge",
        )


def _valid_parameters(judge: Judge) -> dict:
    try:
        return clean_parameters(judge.kind, judge.parameters)
    except serializers.ValidationError as exc:
        raise JudgeError(f"The judge's parameters are invalid: {exc.detail}") from None


def _refuse_while_running(
    judge: Judge, project: Project, setting: str, prompt_version: str, presentation: str
) -> None:
    """``JudgeError`` (conflict) while a run of the judge's key is active on the project and
    alive; a lost one (see :func:`lost_runs`) is ended so that the new run takes it over."""
    active_runs = JudgeRun.objects.filter(
        judge=judge,
        project=project,
        prompt_version=prompt_version,
        setting=setting,
        presentation=presentation,
        status__in=JudgeRun.ACTIVE,
    )
    for active_id in active_runs.values_list("pk", flat=True):
        # Every item may have its outcome though the last batch died before saying so.
        _refresh_counts(active_id)
    _end_lost(active_runs)
    active = active_runs.first()
    if active is not None:
        raise JudgeError(
            f"{judge.name} is already running on this project (run {active.pk}).",
            code="conflict",
        )


def lost_runs(*, runs: QuerySet[JudgeRun]) -> QuerySet[JudgeRun]:
    """The active runs of ``runs`` that no batch has shown a sign of life for
    ``CONCORD_JUDGE_LOST_AFTER_SECONDS`` (their worker was killed, or the broker lost their
    tasks); a run that no batch has started yet counts from its start or creation."""
    last_sign = Coalesce("heartbeat_at", "started_at", "created_at")
    return runs.alias(last_sign=last_sign).filter(
        status__in=JudgeRun.ACTIVE,
        last_sign__lt=timezone.now() - timedelta(seconds=settings.CONCORD_JUDGE_LOST_AFTER_SECONDS),
    )


LOST_MESSAGE = (
    "Lost: no batch of this run showed a sign of life for {seconds} s (its worker was killed or "
    "the queue lost its tasks)."
)


def _end_lost(
    runs: QuerySet[JudgeRun],
    *,
    then: str = "Starting the judge again took over its unfinished items.",
) -> list[int]:
    """Fail the lost runs among ``runs``, saying why (and ``then``, what happens next); their
    unfinished items go to the run that is being started (which claims the results they stored).
    A batch of theirs that is delivered late, or still alive after all, stops at its next status
    check, and a result it writes late is stored once (results are unique per item and key).
    Returns the ids of the runs it ended."""
    now = timezone.now()
    message = LOST_MESSAGE.format(seconds=settings.CONCORD_JUDGE_LOST_AFTER_SECONDS)
    ended_ids = []
    for run_id in lost_runs(runs=runs).values_list("pk", flat=True):
        ended = lost_runs(runs=JudgeRun.objects.filter(pk=run_id)).update(
            status=Status.FAILED, finished_at=now, error=f"{message} {then}"
        )
        if ended:
            log.warning("judge run %s was lost; a new start takes it over", run_id)
            ended_ids.append(run_id)
            _refresh_counts(run_id)
    return ended_ids


@dataclass(frozen=True)
class ResumedRun:
    """What ``judge_runs_resume_lost`` did with one lost run."""

    lost_run_id: int
    run_id: int | None  # the run that took over its unfinished items; None: not resumed
    message: str


def judge_runs_resume_lost() -> list[ResumedRun]:
    """End every lost run (see :func:`lost_runs`) and start its judge again over the same
    items, filters, presentation and the budget it has left, as its starter would by pressing
    start: the new run claims the lost run's results (each keeps ``produced_by``) and judges
    the items it left unfinished. Run periodically (``CELERY_BEAT_SCHEDULE``), so a run whose
    worker was killed, or whose tasks the broker lost, ends and resumes by itself. A lost run
    that cannot be resumed (its budget is spent, its judge's prompt changed, another run of the
    judge is active, its judge no longer runs) is failed with the reason."""
    done = []
    lost = lost_runs(runs=JudgeRun.objects.all()).order_by("pk").values_list("pk", flat=True)
    for lost_id in list(lost):
        _refresh_counts(lost_id)  # every item may have its outcome though no batch said so
        outcome = _resume(lost_id)
        if outcome is not None:
            done.append(outcome)
    return done


def _resume(lost_id: int) -> ResumedRun | None:
    if not _end_lost(JudgeRun.objects.filter(pk=lost_id), then="Taken over automatically:"):
        return None  # it ended meanwhile, or another resume ended it
    lost = JudgeRun.objects.select_related("judge", "project", "started_by").get(pk=lost_id)
    budget: dict[str, int] = {}
    if lost.budget_calls is not None:
        budget["budget_calls"] = lost.budget_calls - lost.calls_reserved
    if lost.budget_tokens is not None:
        budget["budget_tokens"] = lost.budget_tokens - lost.tokens_reserved
    run_id, note = None, ""
    if any(left < 1 for left in budget.values()):
        note = "not resumed: its budget is spent."
    else:
        try:
            if template_for(judge=lost.judge, project=lost.project).key != lost.prompt_version:
                raise JudgeError("its judge's prompt has changed since; start it again.")
            run = judge_run_start_pending(
                judge=lost.judge,
                project=lost.project,
                started_by=lost.started_by,
                filters=lost.filters,
                presentation=lost.presentation,
                budget_calls=budget.get("budget_calls"),
                budget_tokens=budget.get("budget_tokens"),
                resumes=lost_id,
            ).run
            run_id, note = run.pk, f"resumed as run {run.pk}."
        except JudgeError as exc:
            note = f"not resumed: {exc}"
    JudgeRun.objects.filter(pk=lost_id).update(error=f"{lost.error} {note}"[:4000])
    log.warning("judge run %s was lost and %s", lost_id, note)
    return ResumedRun(lost_run_id=lost_id, run_id=run_id, message=note)


def judge_run_heartbeat(*, run_id: int, until: datetime | None = None) -> None:
    """Record a sign of life of one of the run's batches (now, or ``until``: when a retry it
    scheduled is due)."""
    at = Value(until or timezone.now(), output_field=DateTimeField())
    # Never earlier than a retry another batch said is due.
    JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE).update(
        heartbeat_at=Greatest(Coalesce("heartbeat_at", at), at)
    )


def _create_run(
    judge: Judge,
    project: Project,
    *,
    template: PromptTemplate,
    setting: str,
    presentation: str,
    budget: RunBudget,
    filters: RunFilterValues,
    parameters: dict,
    selection: QuerySet[Item],
    started_by: User | None,
) -> JudgeRun:
    uses_prompt = judge.kind == Judge.Kind.LLM
    answer_settings = judge_settings(kind=judge.kind, model=judge.model, parameters=parameters)
    try:
        with transaction.atomic():
            return JudgeRun.objects.create(
                judge=judge,
                project=project,
                prompt_version=template.key,
                # Embedding and NLI judges render no prompt: their settings are recorded.
                prompt=template if uses_prompt else None,
                prompt_fingerprint=template.fingerprint if uses_prompt else "",
                judge_settings=answer_settings,
                settings_fingerprint=settings_fingerprint(answer_settings),
                setting=setting,
                presentation=presentation,
                **budget,
                filters=filters,
                items_per_task=parameters["items_per_task"],
                structured_output=parameters.get("structured_output", ""),
                seed=parameters.get("seed"),
                total=selection.count(),
                started_by=started_by,
            )
    except IntegrityError:  # a concurrent start won the partial unique constraint
        raise JudgeError(
            f"{judge.name} is already running on this project.", code="conflict"
        ) from None


def _adopt_existing_results(run: JudgeRun, selection: QuerySet[Item]) -> list[int]:
    """Claim the selection's answers of the run's key, delete its failed results (they are
    retried); returns the ids of the items left to judge, in order."""
    key = {
        "judge": run.judge,
        "prompt_version": run.prompt_version,
        "setting": run.setting,
        "presentation": run.presentation,
    }
    existing = JudgeResult.objects.filter(**key, item__in=selection)
    existing.filter(status__in=[ResultStatus.FAILED, ResultStatus.NOT_RUN]).delete()
    existing.update(run=run)
    return list(
        selection.exclude(id__in=JudgeResult.objects.filter(**key).values("item_id"))
        .order_by("position", "id")
        .values_list("id", flat=True)
    )


def batches(*, item_ids: Sequence[int], size: int) -> Iterable[list[int]]:
    """The item ids in consecutive chunks of ``size`` (one Celery task each)."""
    for start in range(0, len(item_ids), size):
        yield list(item_ids[start : start + size])


def dealt_batches(*, item_ids: Sequence[int], size: int, processes: int) -> list[list[int]]:
    """The item ids in consecutive chunks of equal size (±1), never above ``size``, their number
    a multiple of ``processes``: a worker's pool processes each get as many items and finish
    together (200-item tasks over 486 items left one process working alone for a minute)."""
    count = len(item_ids)
    if count == 0:
        return []
    tasks = -(-count // max(1, size))
    tasks = min(count, -(-tasks // max(1, processes)) * max(1, processes))
    base, extra = divmod(count, tasks)
    chunks, start = [], 0
    for n in range(tasks):
        end = start + base + (1 if n < extra else 0)
        chunks.append(list(item_ids[start:end]))
        start = end
    return chunks


# Judges whose model runs on the worker's CPU: their tasks are dealt evenly over its processes.
LOCAL_KINDS = ("embedding", "nli")


def _processes(judge: Judge) -> int:
    return settings.CONCORD_JUDGE_WORKER_PROCESSES if judge.kind in LOCAL_KINDS else 1


def _enqueue(run_id: int, item_ids: list[int], size: int, processes: int = 1) -> None:
    from llm_judges.celery_tasks import judge_batch

    options = {"queue": settings.CONCORD_JUDGE_QUEUE} if settings.CONCORD_JUDGE_QUEUE else {}
    chunks = (
        dealt_batches(item_ids=item_ids, size=size, processes=processes)
        if processes > 1
        else batches(item_ids=item_ids, size=size)
    )
    try:
        for chunk in chunks:
            judge_batch.apply_async(args=(run_id, chunk), **options)
    except Exception as exc:  # broker unreachable: say so on the run instead of hanging
        if getattr(judge_batch.app.conf, "task_always_eager", False):
            raise
        log.exception("enqueueing judge run %s failed", run_id)
        _fail_run(run_id, f"Could not enqueue the run's tasks: {exc}")


def judge_run_cancel(*, run: JudgeRun, by: User | None = None) -> bool:
    """Stop a pending or running run (``by``: who, for the project's audit log). Queued tasks
    exit without calling the judge; running ones stop within about a second. Returns False when
    the run had already ended (or turns out to be done: every item has its outcome)."""
    _refresh_counts(run.pk)
    with transaction.atomic():
        stopped = JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE).update(
            status=Status.CANCELLED, finished_at=timezone.now()
        )
        if stopped:
            audit_record(
                project=run.project,
                actor=by,
                kind=AuditKind.JUDGE_RUN_CANCELLED,
                summary=f"Cancelled run {run.pk} of the judge {run.judge.name}.",
                changes={"run": run.pk, "judge": run.judge.name},
            )
    _refresh_counts(run.pk)
    run.refresh_from_db()
    if stopped:
        _announce_finished(run.pk)
    return bool(stopped)


def _fail_run(run_id: int, message: str, *, excerpt: str = "") -> None:
    """End an active run as failed with ``message`` (researchers see it) and, behind it, the
    server's sanitised ``excerpt`` (staff only)."""
    failed = JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE).update(
        status=Status.FAILED,
        error=db_safe_text(text=message)[0][:4000],
        error_excerpt=db_safe_text(text=excerpt)[0][:4000],
        finished_at=timezone.now(),
    )
    _refresh_counts(run_id)
    if failed:
        _announce_finished(run_id)


def _announce_finished(run_id: int) -> None:
    """``judge_run.finished`` to the project's webhooks: how the run ended, with its counts; a
    project dealing actively, before humans start, gets its sampling weights from the answers."""
    run = JudgeRun.objects.select_related("judge").filter(pk=run_id).first()
    if run is None:
        return
    sampling_weights_after_run(project_id=run.project_id)
    event_emit(
        project_id=run.project_id,
        event=webhook_events.JUDGE_RUN_FINISHED,
        data={
            "run": run.pk,
            "judge": run.judge.name,
            "status": run.status,
            "total": run.total,
            "answered": run.answered_count,
            "unparseable": run.unparseable_count,
            "failed": run.failed_count,
            "not_run": run.not_run_count,
            "error": (run.error or "")[:2000],
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        },
    )


def _refresh_counts(run_id: int) -> None:
    """Copy the live counts onto the run. A run whose every item has an outcome ends: "done"
    when at least one item was answered (or none failed), "failed" when every item it judged
    failed; either way with a message that sums up its failed items by kind
    (:func:`failure_summary`)."""
    counts = JudgeResult.objects.filter(run_id=run_id).aggregate(
        answered=Count("id", filter=Q(status=ResultStatus.OK)),
        unparseable=Count("id", filter=Q(status=ResultStatus.UNPARSEABLE)),
        failed=Count("id", filter=Q(status=ResultStatus.FAILED)),
        not_run=Count("id", filter=Q(status=ResultStatus.NOT_RUN)),
        schema_valid=Count("id", filter=Q(schema_valid=True)),
        truncated=Count("id", filter=Q(finish_reason="length")),
    )
    JudgeRun.objects.filter(pk=run_id).update(
        schema_valid_count=counts["schema_valid"],
        truncated_count=counts["truncated"],
        answered_count=counts["answered"],
        unparseable_count=counts["unparseable"],
        failed_count=counts["failed"],
        not_run_count=counts["not_run"],
    )
    finished = counts["answered"] + counts["unparseable"] + counts["failed"] + counts["not_run"]
    ending = JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE, total__lte=finished)
    if not counts["failed"]:
        if ending.update(status=Status.DONE, finished_at=timezone.now()):
            _announce_finished(run_id)
        return
    run = ending.first()
    if run is None:
        return
    summary = failure_summary(run=run)
    if counts["answered"] + counts["unparseable"] == 0:
        status, message = Status.FAILED, f"Every item judged failed: {summary}"
    else:
        status, message = Status.DONE, f"{counts['failed']} items failed: {summary}"
    if ending.update(
        status=status, finished_at=timezone.now(), error=db_safe_text(text=message)[0][:4000]
    ):
        _announce_finished(run_id)


def failure_summary(*, run: JudgeRun) -> str:
    """The run's failed items by kind, most first ("189 × connection error: … ; 3 × HTTP 500:
    server error"), and since when its server was unreachable, if it is."""
    from llm_judges.backends.llm import ERROR_CLASSES

    groups = (
        JudgeResult.objects.filter(run=run, status=ResultStatus.FAILED)
        .values("error_class")
        .annotate(n=Count("id"))
        .order_by("-n", "error_class")
    )
    parts = []
    for group in groups[:5]:
        example = (
            JudgeResult.objects.filter(
                run=run, status=ResultStatus.FAILED, error_class=group["error_class"]
            )
            .order_by("id")
            .values_list("error", flat=True)
            .first()
        )
        label = ERROR_CLASSES.get(group["error_class"], group["error_class"] or "failed")
        parts.append(f"{group['n']} × {label} (e.g. {(example or '')[:200]})")
    text = "; ".join(parts)
    if run.unreachable_since is not None:
        text = (
            f"the server has been unreachable since "
            f"{run.unreachable_since:%Y-%m-%d %H:%M:%S} UTC; {text}"
        )
    return text
