"""The two failure paths shared by figures a project caches per data version and refreshes on a
Celery worker (``studies.services.item_figures``, ``crowd.quality_figures``): a refresh that
raised, and a refresh the broker did not take. Each is recorded on the project's state row (a
model with ``project_id``, ``refreshing_since`` and ``error``) for the page to show, and the next
visit tries again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def refresh_recorded(
    *, state_model: Any, project_id: int, refresh: Callable[[], object], what: str
) -> str:
    """``refresh()``; "done", or "failed" with the error recorded on the state row."""
    try:
        refresh()
    except Exception as exc:  # recorded for the page; the next visit tries again
        log.exception("%s of project %s failed", what, project_id)
        state_model.objects.filter(project_id=project_id).update(
            refreshing_since=None, error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        return "failed"
    return "done"


def refresh_queued(*, state_model: Any, project_id: int, task: Any, what: str) -> None:
    """``task.delay(project_id)``; where the broker is away, that is recorded on the state row."""
    try:
        task.delay(project_id)
    except Exception as exc:  # the broker is away: let the next visit try again
        log.warning("%s of project %s could not be queued: %s", what, project_id, exc)
        state_model.objects.filter(project_id=project_id).update(
            refreshing_since=None, error=f"Could not queue the refresh ({type(exc).__name__})."
        )
