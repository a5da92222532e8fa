"""The item browser's per-item figures (:class:`studies.models.ItemFigures`,
:class:`studies.models.ItemJudgeFigures`): kept in step with the project's data version.

Per item, over the current answers of the annotators who count (not disqualified), as the
review pages count them (``annotation.review``):

* **agreement**: observed agreement, the share of pairs of answers that agree on the task
  type's agreement key (``TaskType.answer_key``; :func:`metrics.kappa.pairwise_agreement`),
  empty below two answers. 1 means every answer agrees; an item is disputed on the review page
  exactly when it is below 1. Chance-corrected figures (alpha) need many items and stay on the
  dashboard;
* **score against gold**: the share of those answers the task type scores correct against the
  item's gold (``TaskType.score(...)["correct"]``), empty without gold;
* per judge of the project, **humans agreeing**: the share of those answers whose agreement key
  is the judge's (its parsed answer for its current prompt version and the project's setting,
  as the dashboard reads it: ``llm_judges.selectors.judge_answers``). Above one half, the judge
  holds the humans' majority.

A refresh recomputes the whole project in one pass over its current answers (a few queries)
and replaces its rows in one transaction. :func:`item_figures_ensure` starts one when the
project's data version (``agreement.reports.gather.data_version``: answers, items, members'
qualification, judge results) has moved: inside the request for small projects, else on the
Celery worker, while the browser shows the figures it has, marked with their time.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from itertools import groupby

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from agreement.reports.gather import data_version, parsed_answers
from annotation import task_types
from annotation.models import Annotation, Item
from annotation.review import excluded_annotators
from annotation.services import statistics_refresh
from core.figure_refresh import refresh_queued, refresh_recorded
from llm_judges.selectors import judge_answers
from metrics.kappa import pairwise_agreement
from projects.models import Project
from studies.models import ItemFigures, ItemFiguresState, ItemJudgeFigures
from studies.selectors.item_browser import project_judges

STALE_AFTER = timedelta(minutes=11)  # a refresh queued or started longer ago was lost
WRITE_BATCH = 5000


def inline_max_answers() -> int:
    """Projects with at most this many answer versions are refreshed inside the request."""
    return int(getattr(settings, "CONCORD_ITEM_FIGURES_INLINE_MAX_ANSWERS", 3000))


@dataclass(frozen=True)
class FiguresStatus:
    fresh: bool
    computed_at: datetime | None
    refreshing: bool
    error: str


def figures_version(*, project: Project) -> tuple[str, int]:
    """The digest of the project's data version, and its number of answer versions."""
    version = data_version(project)
    text = json.dumps(version, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:64], version["annotations"][0]


def item_figures_refresh(*, project: Project, version: str | None = None) -> int:
    """Recompute every item's figures of ``project``; returns the number of items with any.
    ``version`` is the data version they are computed from (read first, so that an answer
    given meanwhile leaves them out of date, never wrongly fresh)."""
    if version is None:
        version, _ = figures_version(project=project)
    task_type = task_types.get(project.task_type)
    excluded = excluded_annotators(project)
    gold_of = dict(
        Item.objects.filter(project=project, gold__isnull=False).values_list("id", "gold")
    )
    rows = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .order_by("item_id", "id")
        .values_list("item_id", "annotator_id", Cast("answer", TextField()))
    )
    keys_of: dict[int, list[str]] = {}
    figures: list[ItemFigures] = []
    for item_id, group in groupby(parsed_answers(rows.iterator(chunk_size=20_000)), key=_first):
        answers = [answer for _, who, answer in group if who not in excluded]
        if not answers:
            continue
        keys = [task_type.answer_key(answer) for answer in answers]
        keys_of[item_id] = keys
        agreement = pairwise_agreement([keys])
        gold = gold_of.get(item_id)
        figures.append(
            ItemFigures(
                item_id=item_id,
                project=project,
                counted=len(keys),
                agreement=None if math.isnan(agreement) else agreement,
                gold_score=_gold_score(task_type, answers, gold) if gold is not None else None,
            )
        )
    judged: list[ItemJudgeFigures] = []
    judges = list(project_judges(project=project))
    if judges:
        id_of = dict(Item.objects.filter(project=project).values_list("external_id", "id"))
        for judge in judges:
            for external_id, answer in judge_answers(project=project, judge=judge).items():
                judged_id = id_of.get(external_id)
                if judged_id is None or not isinstance(answer, dict):
                    continue
                judged_keys = keys_of.get(judged_id)
                share = None
                if judged_keys:
                    key = task_type.answer_key(answer)
                    share = sum(1 for k in judged_keys if k == key) / len(judged_keys)
                judged.append(
                    ItemJudgeFigures(
                        item_id=judged_id, judge=judge, project=project, humans_agreeing=share
                    )
                )
    with transaction.atomic():
        ItemFigures.objects.filter(project=project).delete()
        ItemJudgeFigures.objects.filter(project=project).delete()
        ItemFigures.objects.bulk_create(figures, batch_size=WRITE_BATCH)
        ItemJudgeFigures.objects.bulk_create(judged, batch_size=WRITE_BATCH)
        ItemFiguresState.objects.update_or_create(
            project=project,
            defaults={
                "version": version,
                "computed_at": timezone.now(),
                "refreshing_since": None,
                "error": "",
            },
        )
    # A whole project's rows replaced: the planner's statistics as after an import, so that a
    # filter over the figures is planned for the table as it is (by its index when it keeps
    # few items, along the table's order when it keeps many).
    statistics_refresh(
        rows=len(figures) + len(judged), model_classes=(ItemFigures, ItemJudgeFigures)
    )
    return len(figures)


def _first(row: tuple) -> int:
    return row[0]


def _gold_score(task_type, answers: list, gold) -> float | None:
    verdicts = []
    for answer in answers:
        try:
            correct = task_type.score(answer, gold).get("correct")
        except (KeyError, TypeError, ValueError):  # an answer the scorer cannot read
            continue
        if correct is not None:
            verdicts.append(bool(correct))
    return sum(verdicts) / len(verdicts) if verdicts else None


def item_figures_ensure(*, project: Project, inline: bool | None = None) -> FiguresStatus:
    """The figures' state for the browser, starting a refresh when the data moved and none is
    under way (one at a time per project: a conditional update claims it). ``inline`` forces
    (True) or forbids (False) refreshing inside this call; by default projects with at most
    :func:`inline_max_answers` answer versions refresh inline."""
    version, answers = figures_version(project=project)
    state = ItemFiguresState.objects.filter(project=project).first()
    if state is None:
        try:
            with transaction.atomic():
                state = ItemFiguresState.objects.create(project=project)
        except IntegrityError:  # another request created it first
            state = ItemFiguresState.objects.get(project=project)
    if state.version == version:
        return FiguresStatus(True, state.computed_at, False, "")
    now = timezone.now()
    claimed = ItemFiguresState.objects.filter(
        Q(refreshing_since__isnull=True) | Q(refreshing_since__lt=now - STALE_AFTER),
        project=project,
    ).update(refreshing_since=now)
    if claimed:
        if inline if inline is not None else answers <= inline_max_answers():
            _refresh_recorded(project.pk, version)
            state.refresh_from_db()
            return FiguresStatus(state.version == version, state.computed_at, False, state.error)
        transaction.on_commit(partial(_send, project.pk))
    state.refresh_from_db()
    return FiguresStatus(False, state.computed_at, True, state.error)


def _refresh_recorded(project_id: int, version: str | None = None) -> str:
    project = Project.objects.get(pk=project_id)
    return refresh_recorded(
        state_model=ItemFiguresState,
        project_id=project_id,
        refresh=lambda: item_figures_refresh(project=project, version=version),
        what="item figures",
    )


def _send(project_id: int) -> None:
    from studies.celery_tasks import refresh_item_figures

    refresh_queued(
        state_model=ItemFiguresState,
        project_id=project_id,
        task=refresh_item_figures,
        what="item figures",
    )


def item_figures_run(*, project_id: int) -> str:
    """The Celery task's work: refresh the project's figures (see ``celery_tasks``)."""
    return _refresh_recorded(project_id)
