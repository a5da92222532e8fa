"""Celery tasks of the agreement app (ids in, no objects; the work is in services)."""

from celery import shared_task

from agreement import services


@shared_task(
    name="agreement.compute_snapshot",
    acks_late=True,
    time_limit=services.TIME_LIMIT_S,
    soft_time_limit=services.SOFT_TIME_LIMIT_S,
    ignore_result=True,
)
def compute_snapshot(snapshot_id: int) -> str:
    """Compute one agreement snapshot. Not retried: a failure is recorded on the snapshot (the
    same data would fail again) and the researcher can retry from the dashboard. Safe to run
    twice (acks_late redelivery): the service claims the snapshot with a conditional update."""
    return services.snapshot_compute(snapshot_id=snapshot_id)
