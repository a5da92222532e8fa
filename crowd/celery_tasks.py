"""Celery tasks of the crowd app (ids in; the work is in ``crowd.actions``)."""

from celery import shared_task

from crowd import actions


@shared_task(
    name="crowd.send_actions",
    acks_late=True,
    ignore_result=True,
    time_limit=900,
    soft_time_limit=840,
)
def send_actions(action_ids: list[int]) -> dict:
    """Send the pending platform actions among ``action_ids``. Safe to run twice (a redelivered
    task): each row is claimed by a conditional update before its request goes out, and a row
    that was claimed and not answered stays ``unknown``, never sent again by this task."""
    return actions.actions_send(action_ids=action_ids)


@shared_task(
    name="crowd.refresh_quality_figures",
    acks_late=True,
    ignore_result=True,
    time_limit=660,
    soft_time_limit=600,
)
def refresh_quality_figures(project_id: int) -> str:
    """Recompute the quality page's per-annotator answer figures of one project (safe to run
    twice: the second finds them current or computes the same)."""
    from crowd.quality_figures import quality_figures_run

    return quality_figures_run(project_id=project_id)
