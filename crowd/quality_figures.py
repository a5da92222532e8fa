"""The quality page's per-annotator answer figures, kept in step with the project's answers
(issue 31).

Per annotator, over their current answers to regular items: how many, the mean active time,
and how many were given faster than the project's minimum time per item. These read every
answer of the project (0.3 s of the page's 0.6 s at 100k items), so the page reads them from
:class:`crowd.models.QualityFigures`, computed from a data version: the project's maintained
answer and item revisions (``annotation.selectors.project_counts``: any new, revised or deleted
answer, any item added, removed or changed in kind) and the minimum time. When it moved,
:func:`quality_figures_ensure` computes them again, inside the request on a small project
(at most :func:`inline_max_answers` answer versions), else on the Celery worker while the page
shows the figures it has, marked with their time. One refresh at a time per project (a
conditional update claims it); a refresh lost with its worker is claimed again after
``STALE_AFTER``; a broker that refuses the task leaves the next visit to try again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.selectors import project_counts
from core.figure_refresh import refresh_queued, refresh_recorded
from crowd.models import QualityFigures
from crowd.selectors import answer_figures
from projects.crowd import crowd_settings
from projects.models import Project

STALE_AFTER = timedelta(minutes=11)  # a refresh queued or started longer ago was lost


def inline_max_answers() -> int:
    """Projects with at most this many answer versions are refreshed inside the request."""
    return int(getattr(settings, "CONCORD_QUALITY_INLINE_MAX_ANSWERS", 3000))


@dataclass(frozen=True)
class QualityFiguresStatus:
    """The figures (``{annotator id: {"n", "mean_ms", "fast"}}``), whether they are of the
    current data, when they were computed, whether a refresh is under way, the last error."""

    figures: dict[int, dict]
    fresh: bool
    computed_at: datetime | None
    refreshing: bool
    error: str


def quality_version(*, project: Project) -> tuple[str, int, int]:
    """The data version the figures depend on, the answer versions, and the minimum time in
    ms (one query)."""
    counts = project_counts(project=project)
    fast_ms = crowd_settings(project).min_seconds_per_item * 1000
    version = f"{counts['annotations_revision']}:{counts['items_revision']}:{fast_ms}"
    return version, counts["annotations"], fast_ms


def _status(state: QualityFigures, fresh: bool, refreshing: bool) -> QualityFiguresStatus:
    figures = {int(key): value for key, value in (state.figures or {}).items()}
    return QualityFiguresStatus(figures, fresh, state.computed_at, refreshing, state.error)


def _state_of(project: Project) -> QualityFigures:
    state = QualityFigures.objects.filter(project=project).first()
    if state is not None:
        return state
    try:
        with transaction.atomic():
            return QualityFigures.objects.create(project=project)
    except IntegrityError:  # another request created it first
        return QualityFigures.objects.get(project=project)


def quality_figures_ensure(*, project: Project, inline: bool | None = None) -> QualityFiguresStatus:
    """The figures for the quality page, starting a refresh when the data moved and none is
    under way. ``inline`` forces (True) or forbids (False) refreshing inside this call."""
    version, answers, _ = quality_version(project=project)
    state = _state_of(project)
    if state.version == version and state.computed_at is not None:
        return _status(state, True, False)
    now = timezone.now()
    claimed = QualityFigures.objects.filter(
        Q(refreshing_since__isnull=True) | Q(refreshing_since__lt=now - STALE_AFTER),
        project=project,
    ).update(refreshing_since=now)
    if claimed:
        if inline if inline is not None else answers <= inline_max_answers():
            quality_figures_refresh(project=project)
            state.refresh_from_db()
            return _status(state, state.version == version, False)
        transaction.on_commit(partial(_send, project.pk))
    state.refresh_from_db()
    return _status(state, False, True)


def quality_figures_refresh(*, project: Project) -> None:
    """Compute the figures from the answers now and store them with the version read first (an
    answer given meanwhile leaves them out of date, never wrongly fresh)."""
    version, _, fast_ms = quality_version(project=project)
    figures = answer_figures(project=project, fast_ms=fast_ms)
    QualityFigures.objects.filter(project=project).update(
        version=version,
        figures={str(key): value for key, value in figures.items()},
        computed_at=timezone.now(),
        refreshing_since=None,
        error="",
    )


def quality_figures_run(*, project_id: int) -> str:
    """The Celery task's work: refresh one project's figures; a failure is recorded for the
    page and the next visit tries again."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return "gone"
    return refresh_recorded(
        state_model=QualityFigures,
        project_id=project_id,
        refresh=lambda: quality_figures_refresh(project=project),
        what="quality figures",
    )


def _send(project_id: int) -> None:
    from crowd.celery_tasks import refresh_quality_figures

    refresh_queued(
        state_model=QualityFigures,
        project_id=project_id,
        task=refresh_quality_figures,
        what="quality figures",
    )
