"""Reads for judges: answers as plain data for agreement reports, run progress, pre-selection
(and when it may be shown: ``preselection_blocker``).

Nothing here returns gold. ``judge_answers`` is the interface for the agreement reports: plain
``{item external id: answer}`` in the task type's answer shape, only answers that parsed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, NotRequired, TypedDict

from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Subquery

from annotation.models import Item
from core.wording import indefinite
from llm_judges import prompts
from llm_judges.models import (
    Judge,
    JudgeResult,
    JudgeResultCounts,
    JudgeRun,
    ModelEndpoint,
    Preselection,
    PreselectionShown,
    PromptTemplate,
)
from projects.crowd import crowd_settings

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from projects.models import Project

ResultStatus = JudgeResult.Status


def _setting(project: Project) -> str:
    try:
        return prompts.get(project.task_type).setting(project.config or {})
    except prompts.PromptNotFound:
        return ""


def _per_project(rows: QuerySet, value: Any) -> Subquery:
    """One aggregate of ``rows`` for the outer query's project, as a subquery."""
    return Subquery(
        rows.filter(project_id=OuterRef("pk"))
        .order_by()
        .values("project_id")
        .annotate(value=value)
        .values("value")[:1]
    )


def judge_results_version(*, project: Project) -> list:
    """What changes whenever the project's judge answers could read differently (a cache key
    part): the maintained count and revision of its judge results (a new, re-judged, claimed or
    deleted result moves the revision; :mod:`llm_judges.counter_triggers`), its runs (how many,
    the last finish) and its judges' last change (a prompt version or setting). One query, none
    over the results: the counter row by its key, runs and judges by their project's index."""
    from projects import models as project_models

    counts = JudgeResultCounts.objects.filter(project_id=OuterRef("pk"))
    row = (
        project_models.Project.objects.filter(pk=project.pk)
        .annotate(
            v_results=Subquery(counts.values("results")[:1]),
            v_revision=Subquery(counts.values("revision")[:1]),
            v_runs=_per_project(JudgeRun.objects.all(), Count("id")),
            v_finished=_per_project(JudgeRun.objects.all(), Max("finished_at")),
            v_judges=_per_project(Judge.objects.all(), Max("updated_at")),
        )
        .values_list("v_results", "v_revision", "v_runs", "v_finished", "v_judges")
        .first()
    )
    results, revision, runs, finished, judges = row or (None, None, None, None, None)
    return [
        results or 0,
        revision or 0,
        judges.isoformat() if judges else None,
        runs or 0,
        finished.isoformat() if finished else None,
    ]


def judge_answers(
    *, project: Project, judge: Judge, prompt_version: str | None = None, setting: str | None = None
) -> dict[str, dict]:
    """The judge's parsed answers on the project as ``{item external id: answer}``.

    ``prompt_version`` defaults to the judge's, ``setting`` to the project's current one
    (citation recovery: its masking mode). Unparseable and failed items are absent; see
    ``judge_result_counts`` for how many there are.
    """
    rows = JudgeResult.objects.filter(
        item__project=project,
        judge=judge,
        prompt_version=prompt_version or judge.prompt_version,
        setting=_setting(project) if setting is None else setting,
        presentation="",
        status=ResultStatus.OK,
    ).values_list("item__external_id", "answer")
    return {external_id: answer for external_id, answer in rows if answer is not None}


class JudgeOutcomes(TypedDict):
    answered: int
    unparseable: int
    failed: int
    missing: int  # items not judged yet (a budget's "not run: budget" among them)


def judge_result_counts(
    *, project: Project, judge: Judge, prompt_version: str | None = None, setting: str | None = None
) -> JudgeOutcomes:
    """How many items the judge answered, could not parse, failed on, and has not judged yet."""
    counts = JudgeResult.objects.filter(
        item__project=project,
        judge=judge,
        prompt_version=prompt_version or judge.prompt_version,
        setting=_setting(project) if setting is None else setting,
        presentation="",
    ).aggregate(
        answered=Count("id", filter=Q(status=ResultStatus.OK)),
        unparseable=Count("id", filter=Q(status=ResultStatus.UNPARSEABLE)),
        failed=Count("id", filter=Q(status=ResultStatus.FAILED)),
    )
    items = Item.objects.filter(project=project).count()
    # Items a budget left unjudged ("not run: budget") are missing: not judged yet.
    return JudgeOutcomes(
        answered=counts["answered"],
        unparseable=counts["unparseable"],
        failed=counts["failed"],
        missing=items - counts["answered"] - counts["unparseable"] - counts["failed"],
    )


def judge_results_for_export(
    *, project: Project, with_raw: bool = False, chunk_size: int = 2000
) -> Iterator[JudgeResult]:
    """Every judge result on the project's items (all judges, prompt versions and settings; ok,
    unparseable and failed), with its item, judge and run, in one query however many there are.

    Ordered by judge name, prompt version, setting, then item position. The raw reply is
    loaded only when ``with_raw`` (it is researcher-only and goes in JSONL exports only)."""
    results = _results_for_export(project).select_related("item", "judge", "run", "run__prompt")
    if not with_raw:
        results = results.defer("raw")
    return results.iterator(chunk_size=chunk_size)


EXPORT_RESULT_FIELDS = (
    "item__external_id",
    "item__kind",
    "item__group",
    "judge__name",
    "judge__kind",
    "judge__model",
    "prompt_version",
    "setting",
    "run_id",
    "produced_by_id",
    "run__prompt_fingerprint",
    "run__prompt__name",
    "run__judge_settings",
    "run__settings_fingerprint",
    "presentation",
    "status",
    "answer",
    "error",
    "error_class",
    "attempts",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "seed",
    "schema_valid",
    "detail__raw_cleaned",  # what was removed to store the reply: {"nul": n, …}
)


def judge_result_rows(
    *,
    project: Project,
    item_fields: Iterable[str] = (),
    with_raw: bool = False,
    chunk_size: int = 2000,
) -> Iterator[dict]:
    """``judge_results_for_export`` as plain dicts (no model instances), from one server-side
    cursor: :data:`EXPORT_RESULT_FIELDS`, the item's JSON fields named in ``item_fields`` (as
    ``item__<field>``) and, when ``with_raw``, ``raw``. Same results, same order."""
    fields = [*EXPORT_RESULT_FIELDS, *(f"item__{field}" for field in item_fields)]
    if with_raw:
        fields.append("raw")
    return _results_for_export(project).values(*fields).iterator(chunk_size=chunk_size)


def _results_for_export(project: Project) -> QuerySet[JudgeResult]:
    return JudgeResult.objects.filter(item__project=project).order_by(
        "judge__name", "judge_id", "prompt_version", "setting", "item__position", "item_id"
    )


def endpoints_for_project(*, project: Project | None) -> list[ModelEndpoint]:
    """The model endpoints staff allowed the project to use (for a project not yet created:
    those open to every project)."""
    allowed = Q(all_projects=True)
    if project is not None:
        allowed |= Q(projects=project)
    return list(ModelEndpoint.objects.filter(allowed).distinct().order_by("name"))


def judge_named(*, project: Project, name: str) -> Judge | None:
    """The project's own judge of that name."""
    return Judge.objects.filter(project=project, name=name).select_related("endpoint").first()


def judges_to_copy(*, project: Project, user: User) -> list[Judge]:
    """Judges a researcher may copy into ``project``: the staff catalogue's that can run on the
    project's task type. Another project's judge is never offered, even to a researcher of both
    or a superuser (issue 27: the page offered every project's judges to a superuser); a study
    file carries a judge's settings from one project to another. ``user`` is kept for callers."""
    del user
    candidates = Judge.objects.filter(project__isnull=True).select_related(
        "prompt", "project", "endpoint"
    )
    return sorted(_runnable_on(project, candidates), key=lambda j: j.name)


def _runnable_on(project: Project, judges) -> list[Judge]:
    try:
        prompt = prompts.get(project.task_type)
    except prompts.PromptNotFound:
        return []
    return [
        judge
        for judge in judges
        if judge.kind in prompt.kinds
        and (
            judge.prompt.task_type == project.task_type
            if judge.prompt_id is not None
            else judge.prompt_version in prompt.versions
        )
    ]


def judges_for_project(*, project: Project) -> list[Judge]:
    """The project's own judges that can run on its task type (kind supported, prompt version
    known)."""
    return _runnable_on(
        project,
        Judge.objects.filter(project=project).select_related("prompt", "endpoint").order_by("name"),
    )


def _with_usage(runs: QuerySet[JudgeRun]) -> QuerySet[JudgeRun]:
    """Calls and tokens of each run (every attempt), as subqueries: one query for the list."""
    from django.db.models import IntegerField, Subquery, Sum
    from django.db.models.functions import Coalesce

    from llm_judges.models import JudgeCall

    def total(expression) -> Coalesce:
        rows = (
            JudgeCall.objects.filter(run=OuterRef("pk"))
            .order_by()
            .values("run")
            .annotate(total=expression)
            .values("total")
        )
        return Coalesce(Subquery(rows, output_field=IntegerField()), 0)

    return runs.annotate(
        usage_calls=total(Count("id")),
        usage_prompt_tokens=total(Sum("prompt_tokens")),
        usage_completion_tokens=total(Sum("completion_tokens")),
    )


def _with_live_counts(runs: QuerySet[JudgeRun]) -> QuerySet[JudgeRun]:
    runs = _with_usage(runs)
    return runs.annotate(
        live_answered=Count("results", filter=Q(results__status=ResultStatus.OK)),
        live_unparseable=Count("results", filter=Q(results__status=ResultStatus.UNPARSEABLE)),
        live_failed=Count("results", filter=Q(results__status=ResultStatus.FAILED)),
        live_not_run=Count("results", filter=Q(results__status=ResultStatus.NOT_RUN)),
        live_schema_valid=Count("results", filter=Q(results__schema_valid=True)),
        live_truncated=Count("results", filter=Q(results__finish_reason="length")),
    )


class RunSilence(TypedDict):
    silent_seconds: int | None
    stale: bool
    lost: bool
    lost_after_seconds: NotRequired[int]  # while the run is active


def _silence(run: JudgeRun) -> RunSilence:
    """How long an active run's batches have been silent, and whether the page flags it."""
    from django.conf import settings
    from django.utils import timezone

    if not run.is_active:
        return {"silent_seconds": None, "stale": False, "lost": False}
    last = run.heartbeat_at or run.started_at or run.created_at
    silent = max((timezone.now() - last).total_seconds(), 0.0)
    return {
        "silent_seconds": round(silent),
        "stale": silent > settings.CONCORD_JUDGE_STALE_AFTER_SECONDS,
        "lost": silent > settings.CONCORD_JUDGE_LOST_AFTER_SECONDS,
        "lost_after_seconds": settings.CONCORD_JUDGE_LOST_AFTER_SECONDS,
    }


# The run filters' names on the pages (llm_judges.services.runs.RunFilters).
_FILTER_NAMES = {"kind": "item kind", "group": "group", "external_ids": "items"}


def filters_words(*, filters: dict | None) -> str:
    """A run's filters as a reader says them: "item kind regular, control · group A"; "" for
    none."""
    parts = []
    for key, value in (filters or {}).items():
        values = value if isinstance(value, list | tuple) else [value]
        parts.append(f"{_FILTER_NAMES.get(key, key)} {', '.join(map(str, values))}")
    return " · ".join(parts)


class RunPace(TypedDict):
    pace: dict[str, Any]  # ``core.pace.Pace`` as a dict
    pace_text: str


def _pace(run: JudgeRun, *, processed: int, total: int) -> RunPace:
    """Elapsed time, items per second and, while it runs, the time remaining, from the run's
    stored times and counts (no query): ``pace`` (``core.pace.Pace`` as a dict) and its line."""
    from core.pace import pace_words, work_pace

    remaining = max(total - processed, 0)
    pace = work_pace(
        started_at=run.started_at,
        finished_at=None if run.is_active else (run.finished_at or run.started_at),
        done=processed,
        unit="items",
        remaining_share=remaining / processed if processed else None,
    )
    return {"pace": pace.as_dict(), "pace_text": pace_words(pace)}


def _run_counts(run: JudgeRun) -> tuple[int, int, int, int, int, int]:
    """Answered, unparseable, failed, not run, schema-valid and truncated: counted live while
    the run runs (``live_*``, annotations of ``runs_for_project``'s queryset, which django-stubs
    cannot see), the counts copied at its end afterwards."""
    if run.is_active and hasattr(run, "live_answered"):
        live: Any = run
        return (
            live.live_answered,
            live.live_unparseable,
            live.live_failed,
            live.live_not_run,
            live.live_schema_valid,
            live.live_truncated,
        )
    return (
        run.answered_count,
        run.unparseable_count,
        run.failed_count,
        run.not_run_count,
        run.schema_valid_count,
        run.truncated_count,
    )


class RunUsage(TypedDict):
    calls: int | None
    calls_started: int
    calls_unrecorded: int | None
    input_tokens: int | None
    output_tokens: int | None


class RunProgress(TypedDict):
    """A run's progress figures (``progress_of``); the keys of ``RunSilence`` and ``RunPace``
    too."""

    id: int
    judge: str
    kind: str
    model: str
    prompt_version: str
    prompt_name: str
    prompt_fingerprint: str
    judge_settings: Any
    settings_fingerprint: str
    setting: str
    presentation: str
    filters: Any
    filters_text: str
    status: str
    active: bool
    error: str
    total: int
    done: int
    answered: int
    unparseable: int
    failed: int
    structured_output: str
    schema_honoured_by_server: bool | None
    schema_valid: int
    truncated: int
    complete_replies: int
    seed: int | None
    usage: RunUsage
    unreachable_since: str | None
    silent_seconds: int | None
    stale: bool
    lost: bool
    lost_after_seconds: NotRequired[int]
    not_run: int
    budget_calls: int | None
    budget_tokens: int | None
    budget_reached: bool
    remaining: int
    percent_answered: float
    percent_unparseable: float
    percent_failed: float
    percent_not_run: float
    percent: float
    pace: dict[str, Any]
    pace_text: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    started_by: str | None


def progress_of(*, run: JudgeRun) -> RunProgress:
    """Progress figures of a run from ``runs_for_project``/``run_for_project`` (live counts
    while it runs, the counts copied at its end afterwards: later runs may claim its results)."""
    answered, unparseable, failed, not_run, schema_valid, truncated = _run_counts(run)
    done = answered + unparseable
    total = run.total

    def percent(n: int) -> float:
        return round(100 * n / total, 1) if total else 100.0

    return {
        "id": run.pk,
        "judge": run.judge.name,
        "kind": run.judge.kind,
        "model": run.judge.model,
        "prompt_version": run.prompt_version,
        # Embedding and NLI judges use no prompt: their settings are their provenance.
        "prompt_name": run.prompt.name if run.prompt and run.uses_prompt else "",
        "prompt_fingerprint": run.prompt_fingerprint if run.uses_prompt else "",
        "judge_settings": run.judge_settings,
        "settings_fingerprint": run.settings_fingerprint,
        "setting": run.setting,
        "presentation": run.presentation,
        "filters": run.filters,
        "filters_text": filters_words(filters=run.filters),
        "status": run.status,
        "active": run.is_active,
        "error": run.error,
        "total": total,
        "done": done,
        "answered": answered,
        "unparseable": unparseable,
        "failed": failed,
        # LLM structured output, each part apart: the mode sent (json_schema,
        # json_object_schema, none); whether the server says it honoured it (OpenAI-compatible
        # servers never say: None; transformers serve ignores it and only logs so); replies that
        # matched the schema; replies cut at max_tokens, which cannot match; and of the replies
        # that ended on their own, how many matched (all, when the server honours it).
        "structured_output": run.structured_output,
        "schema_honoured_by_server": None,
        "schema_valid": schema_valid,
        "truncated": truncated,
        "complete_replies": max(done - truncated, 0),
        "seed": run.seed,
        # LLM: calls started (every attempt; reserved before it is made), calls whose outcome is
        # recorded, and the tokens the server counted. Started but not recorded: in flight, or
        # lost with a killed worker (usage unknown).
        "usage": {
            "calls": getattr(run, "usage_calls", None),
            "calls_started": run.calls_reserved,
            "calls_unrecorded": (
                max(run.calls_reserved - run.usage_calls, 0)
                if hasattr(run, "usage_calls")
                else None
            ),
            "input_tokens": getattr(run, "usage_prompt_tokens", None),
            "output_tokens": getattr(run, "usage_completion_tokens", None),
        },
        "unreachable_since": (run.unreachable_since.isoformat() if run.unreachable_since else None),
        **_silence(run),
        "not_run": not_run,
        "budget_calls": run.budget_calls,
        "budget_tokens": run.budget_tokens,
        "budget_reached": not_run > 0,
        "remaining": max(total - done - failed - not_run, 0),
        "percent_answered": percent(answered),
        "percent_unparseable": percent(unparseable),
        "percent_failed": percent(failed),
        "percent_not_run": percent(not_run),
        "percent": percent(done + failed + not_run),
        **_pace(run, processed=done + failed + not_run, total=total),
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "started_by": run.started_by.username if run.started_by else None,
    }


def runs_for_project(*, project: Project, limit: int = 50) -> list[JudgeRun]:
    """The project's latest runs with their judge and live counts, in one query."""
    runs = JudgeRun.objects.filter(project=project).select_related("judge", "started_by", "prompt")
    return list(_with_live_counts(runs).order_by("-created_at", "-id")[:limit])


def run_for_project(*, project: Project, run_id: int) -> JudgeRun | None:
    runs = JudgeRun.objects.filter(project=project, pk=run_id).select_related(
        "judge", "started_by", "prompt"
    )
    return _with_live_counts(runs).first()


class RunCallUsage(TypedDict):
    """Calls, tokens and latency of an LLM run (its page; the progress counts calls in
    ``RunUsage``); the sums and latencies are None without calls."""

    calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    mean_latency_ms: float | None
    max_latency_ms: int | None
    retried: int  # calls that met a transient error
    truncated: int  # replies cut at max_tokens


def run_usage(*, run: JudgeRun) -> RunCallUsage:
    """Calls, tokens and latency of an LLM run (every attempt counts)."""
    from django.db.models import Avg, Max, Sum

    usage = run.calls.aggregate(
        calls=Count("id"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        mean_latency_ms=Avg("latency_ms"),
        max_latency_ms=Max("latency_ms"),
        retried=Count("id", filter=Q(outcome="transient")),
        truncated=Count("id", filter=Q(finish_reason="length")),
    )
    return RunCallUsage(**usage)  # type: ignore[typeddict-item]  # aggregate() names these keys


def run_problems(*, run: JudgeRun, limit: int = 100) -> list[JudgeResult]:
    """Unparseable, failed and not-run results of a run, with their items, for the run page:
    failed first (their cause is the run's), then unparseable, then not run; item order within."""
    from django.db.models import Case, IntegerField, When

    order = Case(
        When(status=ResultStatus.FAILED, then=0),
        When(status=ResultStatus.UNPARSEABLE, then=1),
        default=2,
        output_field=IntegerField(),
    )
    return list(
        run.results.exclude(status=ResultStatus.OK)
        .select_related("item")
        .alias(rank=order)
        .order_by("rank", "item__position", "item_id")[:limit]
    )


class ProblemGroup(TypedDict):
    status: str
    error_class: str
    label: str
    count: int
    example: str  # the first such result's message
    first_item: str  # its item's external id


def run_problem_groups(*, run: JudgeRun) -> list[ProblemGroup]:
    """The run's results without an answer grouped by kind, most first: ``{"status",
    "error_class", "label", "count", "example", "first_item"}`` (``example``: the first such
    result's message). Two queries however many problems there are."""
    from django.db.models import Min

    from llm_judges.backends.llm import ERROR_CLASSES

    labels = {
        **ERROR_CLASSES,
        "unparseable": "unparseable reply",
        "truncated": "reply cut at max_tokens",
        "budget": "not run: budget",
        "time_limit": "the task's time limit",
        "prompt": "the prompt cannot be built",
        "internal": "an error of the batch",
    }
    groups = list(
        run.results.exclude(status=ResultStatus.OK)
        .values("status", "error_class")
        .annotate(count=Count("id"), first=Min("id"))
        .order_by("-count", "status", "error_class")
    )
    firsts = {
        row["id"]: row
        for row in JudgeResult.objects.filter(id__in=[g["first"] for g in groups]).values(
            "id", "error", "item__external_id"
        )
    }
    return [
        ProblemGroup(
            status=group["status"],
            error_class=group["error_class"],
            label=labels.get(group["error_class"], group["error_class"] or group["status"]),
            count=group["count"],
            example=firsts[group["first"]]["error"],
            first_item=firsts[group["first"]]["item__external_id"],
        )
        for group in groups
    ]


def preselection_of(*, project: Project) -> Preselection | None:
    return Preselection.objects.select_related("judge").filter(project=project).first()


CONTROLS_DEALT = (
    "Pre-selection is not shown in this project because it mixes control items into the "
    "annotators' work. Controls never show one (they measure the annotators, not the judge), "
    "and showing it on every other item would tell annotators which items are the controls."
)


def preselection_blocker(*, project: Project, judge: Judge, prompt_version: str) -> str:
    """Why ``judge``'s answers cannot be pre-selected in ``project`` right now, or "" when they
    can. The rule makes a pre-selection say nothing about an item's kind: it is on for every
    regular item or for none.

    - Never on controls, whose answers measure the annotator. So in a project that deals
      controls (crowd settings mix them in and control items exist) it is on nowhere: on
      everything but the controls, a 204 would mark each control.
    - Only when the judge has a parsed answer (this prompt version, the project's setting) for
      every regular item: an answer on some items only (a run filtered by kind or group, failed
      items, items imported after the run) would single out the others.
    - Never in qualification rounds, whose items are all qualification items and whose pages
      say they are a round, so leaving them out tells nothing."""
    crowd = crowd_settings(project)
    if crowd.controls and Item.objects.filter(project=project, kind=Item.Kind.CONTROL).exists():
        return CONTROLS_DEALT
    answered = JudgeResult.objects.filter(
        item=OuterRef("pk"),
        judge=judge,
        prompt_version=prompt_version,
        setting=_setting(project),
        presentation="",
        status=ResultStatus.OK,
    )
    counts = (
        Item.objects.filter(project=project, kind=Item.Kind.REGULAR)
        .annotate(answered=Exists(answered))
        .aggregate(total=Count("id"), missing=Count("id", filter=Q(answered=False)))
    )
    if counts["missing"]:
        return (
            f"Pre-selection is waiting: {judge.name} ({prompt_version}) has no parsed answer yet "
            f"for {counts['missing']} of the project's {counts['total']} items. It is shown on "
            "every item or on none, so that the items without an answer do not stand out. Start "
            "a run without filters: annotators see it as soon as every item has an answer."
        )
    return ""


class PreselectionStatus(TypedDict):
    preselection: Preselection | None
    showing: bool  # whether annotators see it now
    reason: str  # why not ("" when showing or none is configured)


def preselection_status(*, project: Project) -> PreselectionStatus:
    """``{"preselection", "showing", "reason"}``: the configured pre-selection (or None),
    whether annotators see it now, and why not (``preselection_blocker``) for the judges page."""
    preselection = preselection_of(project=project)
    if preselection is None:
        return PreselectionStatus(preselection=None, showing=False, reason="")
    reason = preselection_blocker(
        project=project, judge=preselection.judge, prompt_version=preselection.prompt_version
    )
    return PreselectionStatus(preselection=preselection, showing=not reason, reason=reason)


class PreselectionAnswer(NamedTuple):
    """What to pre-select on an item: the judge, its result and the answer's judged fields."""

    judge: Judge
    result: JudgeResult
    answer: dict[str, Any]  # in the task type's answer shape, the fields the judge fills


def preselection_answer(*, project: Project, item: Item) -> PreselectionAnswer | None:
    """(judge, result, answer) to pre-select on ``item``, or None: no pre-selection configured,
    not shown in the project now (``preselection_blocker``), or ``item`` is not a regular item.
    The answer holds only the fields the judge fills (citation recovery: ``sentences`` and
    ``none``).

    The project-wide check comes first and costs the same for every item, so neither the
    answer nor the time it takes depends on the item's kind while nothing is shown."""
    status = preselection_status(project=project)
    preselection = status["preselection"]  # never None while showing
    if preselection is None or not status["showing"] or item.kind != Item.Kind.REGULAR:
        return None
    result = JudgeResult.objects.filter(
        item=item,
        judge=preselection.judge,
        prompt_version=preselection.prompt_version,
        setting=_setting(project),
        presentation="",
        status=ResultStatus.OK,
    ).first()
    if result is None:  # cannot happen while showing; a run may replace results meanwhile
        return None
    fields = prompts.get(project.task_type).answer_fields
    answer = {k: v for k, v in (result.answer or {}).items() if not fields or k in fields}
    return PreselectionAnswer(preselection.judge, result, answer)


def preselections_shown(*, project: Project) -> dict[tuple[int, int], str]:
    """``{(item id, annotator id): judge name}`` for every assignment on which a pre-selection
    was shown: exports and agreement reports can tell anchored answers apart."""
    rows = PreselectionShown.objects.filter(assignment__project=project).values_list(
        "assignment__item_id", "assignment__annotator_id", "judge__name"
    )
    return {(item_id, annotator_id): name for item_id, annotator_id, name in rows}


class PromptPreview(TypedDict):
    messages: list[prompts.ChatMessage]
    response_format: dict | None
    fields: dict
    error: str  # why it cannot be rendered ("" when it can)


def prompt_preview(
    *, template: PromptTemplate, item: Item, presentation: str = ""
) -> PromptPreview:
    """``template`` rendered for ``item`` as the judge would send it: ``{"messages",
    "response_format", "fields", "error"}``; ``error`` says why it cannot be rendered (the item
    is of another task type, or the task type cannot build a value for it)."""
    from llm_judges.services.prompt_templates import template_messages, template_response_format

    preview = PromptPreview(messages=[], response_format=None, fields={}, error="")
    if item.project.task_type != template.task_type:
        preview["error"] = (
            f"The item is {indefinite(item.project.task_type)} item; {template} is a "
            f"{template.task_type} prompt."
        )
        return preview
    try:
        prompt = prompts.get(template.task_type)
        preview["fields"] = prompt.item_fields(item, presentation=presentation)
        preview["messages"] = template_messages(
            template=template, prompt=prompt, item=item, presentation=presentation
        )
        preview["response_format"] = template_response_format(
            template=template, prompt=prompt, item=item, presentation=presentation
        )
    except Exception as exc:  # shown to the researcher: a malformed item must not be a 500
        preview["error"] = f"Cannot render the prompt for this item: {exc}"
    return preview


class RunEstimate(TypedDict):
    """What a run would cost (``run_estimate``)."""

    judge: str
    kind: str
    prompt: str
    prompt_fingerprint: str
    items: int
    presentations: list[str]
    to_judge: int
    calls: int
    prompt_tokens: int  # estimated ("about")
    prompt_tokens_bound: int  # as a budget reserves them
    max_completion_tokens: int
    max_tokens: int  # the bound's "at most", in all
    unrenderable: int
    method: str


def run_estimate(
    *,
    judge: Judge,
    project: Project,
    filters: dict | None = None,
    both_orders: bool = False,
) -> RunEstimate:
    """What a run would cost, before it starts: the items it covers, those left to judge (no
    answer of the judge's key yet), and for an LLM judge the calls (one per item and
    presentation) and tokens: prompt tokens estimated from the rendered prompts (about four
    characters per token, ``budget.estimate_tokens``: "about"), and bounded as a budget
    reserves them (``budget.PromptMeter``: the judge's tokenizer, else one token per byte),
    completion tokens at most ``max_tokens`` each; ``max_tokens`` (in all) is the bound's
    "at most". Raises ``JudgeError`` as starting the run would (judge, filters)."""
    from llm_judges.services.configuration import _prompt_for
    from llm_judges.services.prompt_templates import template_for
    from llm_judges.services.runs import _selection, clean_filters

    prompt = _prompt_for(judge, project)
    cleaned = clean_filters(filters=filters)
    template = template_for(judge=judge, project=project)
    setting = prompt.setting(project.config or {})
    if both_orders and not prompt.presentations:
        from llm_judges.services.errors import JudgeError

        raise JudgeError(
            f"{project.task_type} items have no other presentation to judge them in.",
            field="both_orders",
        )
    presentations = [""] + (list(prompt.presentations) if both_orders else [])
    selection = list(_selection(project, cleaned).select_related("project").order_by("position"))
    done = {
        (item_id, presentation)
        for item_id, presentation in JudgeResult.objects.filter(
            judge=judge,
            prompt_version=template.key,
            setting=setting,
            item__in=[item.pk for item in selection],
            status__in=[ResultStatus.OK, ResultStatus.UNPARSEABLE],
        ).values_list("item_id", "presentation")
    }
    todo = [(item, p) for p in presentations for item in selection if (item.pk, p) not in done]
    estimate = RunEstimate(
        judge=judge.name,
        kind=judge.kind,
        prompt=str(template),
        prompt_fingerprint=template.fingerprint,
        items=len(selection),
        presentations=presentations,
        to_judge=len(todo),
        calls=0,
        prompt_tokens=0,
        prompt_tokens_bound=0,
        max_completion_tokens=0,
        max_tokens=0,
        unrenderable=0,
        method="",
    )
    if judge.kind != Judge.Kind.LLM:
        estimate["method"] = (
            f"{indefinite(judge.kind, capital=True)} judge runs on the workers: no calls, no tokens."
        )
        return estimate
    _estimate_llm(estimate, judge=judge, prompt=prompt, template=template, todo=todo)
    return estimate


def _estimate_llm(estimate: RunEstimate, *, judge: Judge, prompt, template, todo: list) -> None:
    """An LLM judge's calls and tokens for the items to judge, into ``estimate``."""
    from llm_judges.parameters import clean_parameters
    from llm_judges.services import budget
    from llm_judges.services.prompt_templates import template_messages

    parameters = {**clean_parameters(judge.kind, judge.parameters), **(template.parameters or {})}
    try:
        meter = budget.PromptMeter(tokenizer=parameters.get("tokenizer", ""))
    except Exception as exc:  # ConfigError: the tokenizer cannot be loaded
        from llm_judges.services.errors import JudgeError

        raise JudgeError(str(exc), field="judge") from None
    for item, presentation in todo:
        try:
            messages = template_messages(
                template=template, prompt=prompt, item=item, presentation=presentation
            )
        except Exception:
            estimate["unrenderable"] += 1  # fails without a call
            continue
        estimate["calls"] += 1
        estimate["prompt_tokens"] += budget.estimate_tokens(messages=messages)
        estimate["prompt_tokens_bound"] += meter.prompt_tokens(messages=messages)
    estimate["max_completion_tokens"] = estimate["calls"] * parameters["max_tokens"]
    estimate["max_tokens"] = estimate["prompt_tokens_bound"] + estimate["max_completion_tokens"]
    bound = (
        "counted by the judge's tokenizer"
        if meter.exact
        else "bounded at one token per UTF-8 byte plus the chat template's tokens (a judge "
        "with a tokenizer gets the exact count)"
    )
    estimate["method"] = (
        "One call per item to judge (retries of transient errors come on top). Input tokens "
        f"about {budget.CHARS_PER_TOKEN} characters per token; for 'at most' {bound}; "
        f"completion tokens at most max_tokens ({parameters['max_tokens']}) per call. A token "
        "budget reserves the same bound before each call."
    )


def judge_presented_answers(*, project: Project, judge: Judge) -> dict[str, dict[str, dict]]:
    """The judge's parsed answers in presentations other than the annotators' (ranking:
    "reversed"), ``{presentation: {item external id: answer}}``, for its current prompt version
    and the project's setting: compared with ``judge_answers`` they give its self-agreement
    (position bias). One query."""
    rows = (
        JudgeResult.objects.filter(
            item__project=project,
            judge=judge,
            prompt_version=judge.prompt_version,
            setting=_setting(project),
            status=ResultStatus.OK,
        )
        .exclude(presentation="")
        .values_list("presentation", "item__external_id", "answer")
    )
    presented: dict[str, dict[str, dict]] = {}
    for presentation, external_id, answer in rows:
        if answer is not None:  # OK results always have one
            presented.setdefault(presentation, {})[external_id] = answer
    return presented
