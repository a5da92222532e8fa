"""Reads for the researcher dashboard that are cheap enough to run on every request."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, TypedDict

from django.db import connection
from django.db.models import Sum

from annotation.models import Annotation, Item
from annotation.selectors import AnnotatorProgress, project_progress
from core.errors import Refusal
from projects.models import Membership, Project
from projects.permissions import RESEARCH_ROLES

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from agreement.reports.inputs import ReportInput
    from agreement.reports.projection import Projection
    from agreement.reports.sections import Estimand
    from agreement.reports.tables import Table
    from agreement.reports.validation import ProjectJudgeValidation


class DashboardAnnotator(AnnotatorProgress):
    qualification: str
    qualification_label: str
    median_time_s: float | None  # median active seconds per item


class DashboardProgress(TypedDict):
    """``annotation.selectors.ProjectProgress`` with the dashboard's annotator rows."""

    items: int
    regular_items: int
    complete_items: int
    answers_needed: int
    answers_submitted: int
    percent: float
    annotators: list[DashboardAnnotator]
    versions: int


def dashboard_progress(
    *, project: Project, median_times: dict[str, float] | None = None
) -> DashboardProgress:
    """:func:`annotation.selectors.project_progress` plus, per annotator, the qualification and the
    median active time per submitted item. A fixed number of queries.

    Time per item: the active time of all versions of the annotator's answer summed (a revision
    counts its own time), over regular items; the median is over the annotator's items. On
    PostgreSQL the medians are computed by the database (one row per annotator comes back, not
    one per answer, so the web process's memory does not grow with the answers).
    ``median_times`` (``{pseudonym: seconds}``, from :func:`median_times_s`, as stored with a
    snapshot's page) skips that query, the one that reads every answer.
    """
    progress = project_progress(project=project)
    members = {
        pseudonym: (user_id, qualification)
        for pseudonym, user_id, qualification in Membership.objects.filter(
            project=project
        ).values_list("pseudonym", "user_id", "qualification")
    }
    if median_times is None:
        median_times = _median_times_by_pseudonym(project, members)
    labels = dict(Membership.Qualification.choices)
    annotators: list[DashboardAnnotator] = []
    for row in progress["annotators"]:
        _, qualification = members.get(row["pseudonym"], (None, ""))
        annotators.append(
            {
                **row,
                "qualification": qualification,
                "qualification_label": labels.get(qualification, qualification),
                "median_time_s": median_times.get(row["pseudonym"]),
            }
        )
    return {
        "items": progress["items"],
        "regular_items": progress["regular_items"],
        "complete_items": progress["complete_items"],
        "answers_needed": progress["answers_needed"],
        "answers_submitted": progress["answers_submitted"],
        "percent": progress["percent"],
        "annotators": annotators,
        "versions": progress["versions"],
    }


def median_times_s(*, project: Project) -> dict[str, float]:
    """``{pseudonym: median active seconds per item}`` of the project's annotators (two
    queries; the first reads every answer, so the worker stores it with a snapshot's page)."""
    members = {
        pseudonym: (user_id, qualification)
        for pseudonym, user_id, qualification in Membership.objects.filter(
            project=project
        ).values_list("pseudonym", "user_id", "qualification")
    }
    return _median_times_by_pseudonym(project, members)


def _median_times_by_pseudonym(project: Project, members: dict) -> dict[str, float]:
    medians = _median_times_ms(project)
    return {
        pseudonym: round(medians[user_id] / 1000, 1)
        for pseudonym, (user_id, _) in members.items()
        if user_id in medians
    }


_MEDIAN_SQL = """
SELECT per_item.annotator_id, percentile_cont(0.5) WITHIN GROUP (ORDER BY per_item.ms)
FROM (
    SELECT a.annotator_id, COALESCE(SUM(a.time_spent_ms), 0) AS ms
    FROM annotation_annotation a
    JOIN annotation_item i ON i.id = a.item_id
    WHERE i.project_id = %s AND i.kind = %s
    GROUP BY a.assignment_id, a.annotator_id
) per_item
GROUP BY per_item.annotator_id
"""


def _median_times_ms(project: Project) -> dict[int, float]:
    """``{annotator id: median active ms per item}`` (one query)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_MEDIAN_SQL, [project.pk, Item.Kind.REGULAR])
            return {user_id: float(ms) for user_id, ms in cursor.fetchall()}
    totals = (
        Annotation.objects.filter(item__project=project, item__kind=Item.Kind.REGULAR)
        .values("assignment_id", "annotator_id")
        .annotate(ms=Sum("time_spent_ms"))
        .values_list("annotator_id", "ms")
    )
    per_user: dict[int, list[int]] = defaultdict(list)
    for user_id, ms in totals:
        per_user[user_id].append(ms or 0)
    return {user_id: median(times) for user_id, times in per_user.items()}


def comparable_projects(*, user: User, project: Project) -> list[Project]:
    """Other projects of the same task type where ``user`` is a researcher (for the compare
    form)."""
    candidates = Project.objects.filter(task_type=project.task_type).exclude(pk=project.pk)
    if not user.is_superuser:
        candidates = candidates.filter(
            memberships__user=user,
            memberships__role__in=RESEARCH_ROLES,
            memberships__removed_at__isnull=True,
        ).distinct()
    return list(candidates.order_by("name"))


def judge_validation(
    *,
    project: Project,
    subset: str = "all",
    n_boot: int = 1000,
    confidence: float = 0.95,
    judges: tuple[str, ...] | None = None,
) -> ProjectJudgeValidation:
    """Every judge of ``project`` (or only ``judges``) validated against the counted humans on
    ``subset`` (:func:`agreement.reports.validation.judge_validation_report`), plus
    ``available_judges``. A bounded number of queries, whatever the number of items and
    answers: those of :func:`agreement.reports.gather.gather`, with one per judge. It reads
    every answer: the page reads it cached (``agreement.services.judge_validation_request``).

    Raises ``ValueError`` for a subset the task type does not offer or bad bootstrap settings.
    """
    result, _, _ = _judge_validation(
        project=project, subset=subset, n_boot=n_boot, confidence=confidence, judges=judges
    )
    return result


def _judge_validation(
    *,
    project: Project,
    subset: str,
    n_boot: int,
    confidence: float,
    judges: tuple[str, ...] | None = None,
) -> tuple[ProjectJudgeValidation, ReportInput, list[str]]:
    from agreement.reports.gather import available_judges, gather
    from agreement.reports.inputs import AnnotatorFilter, ReportOptions
    from agreement.reports.sections import judge_validation_for
    from agreement.reports.validation import judge_validation_report

    options = ReportOptions(n_boot=n_boot, confidence=confidence)
    names = tuple(judges) if judges is not None else tuple(available_judges(project))
    report_input = gather(
        project=project, annotator_filter=AnnotatorFilter(judges=names), options=options
    )
    result = judge_validation_report(
        report_input, hooks=judge_validation_for(project.task_type), subset=subset
    )
    validated: ProjectJudgeValidation = {
        **result,
        "available_judges": list(report_input.available_judges),
    }
    return validated, report_input, list(names)


def judge_validation_figures(
    *, project: Project, subset: str = "all", n_boot: int = 1000, confidence: float = 0.95
) -> dict:
    """What the judge validation page shows, from one pass over the data (the worker's part of
    ``agreement.services.judge_validation_request``): ``validation``, as
    :func:`judge_validation` returns it, and ``need``, the pilots of every figure and judge for
    "How many human annotations do I need?" (:func:`need_pilots`, read back by
    :func:`labels_needed_stored`)."""
    result, report_input, judges = _judge_validation(
        project=project, subset=subset, n_boot=n_boot, confidence=confidence
    )
    need = need_pilots(
        task_type=project.task_type,
        report_input=report_input,
        judges=judges,
        confidence=confidence,
    )
    return {"validation": result, "need": need}


def snapshot_table(*, snapshot_id: int, name: str) -> Table | None:
    """One table of a snapshot's report (for its CSV download), read alone from the database:
    the rest of the report is not loaded. None if the report has no such table. One query."""
    from django.db.models.fields.json import KeyTransform

    from agreement.models import AgreementSnapshot

    return (
        AgreementSnapshot.objects.filter(pk=snapshot_id)
        .values_list(KeyTransform(name, KeyTransform("tables", "result")), flat=True)
        .first()
    )


@dataclass
class LabelsNeeded:
    """The answer to "How many human annotations do I need?" for one figure and judge: the
    figures and judges to choose from, the ones chosen, and the projection
    (:class:`agreement.reports.projection.Projection`; None when the task type declares no
    figures or no judge has answers)."""

    figures: list[str]
    judges: list[str]
    figure: str
    judge: str
    bounds: tuple[float, float] | None
    projection: Projection | None


class BadProjectionQuery(Refusal):
    """A figure, judge or target width the projection cannot use (the message names it)."""


def _chosen(value: str, choices: list[str], name: str) -> str:
    if not value:
        return choices[0] if choices else ""
    if value not in choices:
        raise BadProjectionQuery(f"There is no {name} {value!r} here.", field=name)
    return value


def _by_figure(found: list[Estimand]) -> dict[str, Estimand]:
    """Estimands by figure name, a repeated name numbered ("… (2)") so each can be chosen."""
    named: dict[str, Estimand] = {}
    for estimand in found:
        name, copy = estimand.figure, 2
        while name in named:
            name, copy = f"{estimand.figure} ({copy})", copy + 1
        named[name] = estimand
    return named


def need_pilots(
    *, task_type: str, report_input: ReportInput, judges: list[str], confidence: float = 0.95
) -> dict:
    """What "How many human annotations do I need?" reads, for every figure the task type
    declares and every judge in ``judges`` (answered in ``report_input``): each pair's pilot
    (:class:`agreement.reports.projection.PilotSummary`), as JSON. Stored with the judge
    validation's cached figures, so the page projects any target width without the data."""
    from agreement.reports.projection import projection_pilot
    from agreement.reports.sections import estimands_for

    declared = estimands_for(task_type)
    stored: dict = {"declared": declared is not None, "judges": judges, "figures": []}
    stored["pilots"] = {}
    if declared is None or not judges:
        return stored
    estimands = _by_figure(declared(report_input))
    stored["figures"] = list(estimands)
    stored["pilots"] = {
        figure: {
            judge: projection_pilot(estimand, judge, confidence=confidence).as_json()
            for judge in judges
        }
        for figure, estimand in estimands.items()
    }
    return stored


def labels_needed_stored(
    *, stored: dict, figure: str = "", judge: str = "", target_width: float | None = None
) -> LabelsNeeded:
    """:func:`labels_needed` from the pilots :func:`need_pilots` stored: no query.

    Raises :class:`BadProjectionQuery` (field ``figure``, ``judge`` or ``width``) as
    :func:`labels_needed` does."""
    from agreement.reports.projection import BadTarget, PilotSummary, projection_from_pilot

    judges = list(stored["judges"])
    judge = _chosen(judge, judges, "judge")
    if not stored["declared"] or not judge:
        return LabelsNeeded([], judges, "", judge, None, None)
    figures = list(stored["figures"])
    figure = _chosen(figure, figures, "figure")
    if not figure:
        return LabelsNeeded([], judges, "", judge, None, None)
    summary = PilotSummary.from_json(stored["pilots"][figure][judge])
    try:
        result = projection_from_pilot(summary, target_width=target_width)
    except BadTarget as exc:
        raise BadProjectionQuery(f"Target width: {exc}.", field="width") from None
    return LabelsNeeded(figures, judges, figure, judge, summary.bounds, result)


def labels_needed(
    *,
    project: Project,
    figure: str = "",
    judge: str = "",
    target_width: float | None = None,
    confidence: float = 0.95,
) -> LabelsNeeded:
    """The projection of ``figure`` (default: the task type's first) with ``judge`` (default:
    the first with answers) against human labels, and with ``target_width`` the human labels
    needed (:mod:`agreement.reports.projection`). The queries of
    :func:`agreement.reports.gather.gather` with one judge, plus one: a fixed number whatever
    the items, answers and judges. It reads every answer: pages read the pilots stored with the
    judge validation instead (:func:`labels_needed_stored`).

    Raises :class:`BadProjectionQuery` (field ``figure``, ``judge`` or ``width``) for a figure
    or judge the project does not have, or a target width that cannot be reached or read.
    """
    from agreement.reports.gather import available_judges, gather
    from agreement.reports.inputs import AnnotatorFilter, ReportOptions
    from agreement.reports.sections import estimands_for

    judges = available_judges(project)
    judge = _chosen(judge, judges, "judge")
    if estimands_for(project.task_type) is None or not judge:
        return LabelsNeeded([], judges, "", judge, None, None)
    report_input = gather(
        project=project,
        annotator_filter=AnnotatorFilter(judges=(judge,)),
        options=ReportOptions(confidence=confidence),
    )
    stored = need_pilots(
        task_type=project.task_type,
        report_input=report_input,
        judges=[judge],
        confidence=confidence,
    )
    stored["judges"] = judges
    return labels_needed_stored(
        stored=stored, figure=figure, judge=judge, target_width=target_width
    )
