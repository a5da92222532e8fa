"""Celery tasks for judge runs. They take ids, never objects, and call services.

``judge_batch`` is acknowledged late (after it returns) and rejected back to the queue if its
worker dies, so a killed worker's batch runs again elsewhere; the service it calls is idempotent,
so the second run stores nothing twice. Each batch records a heartbeat on its run while it works
(see ``services.lost_runs``): a run whose every worker was killed, or whose tasks the broker
lost, is taken over by the next start instead of staying "running". Transient errors come back
from the service as a list of items to retry; the task re-queues only those, with the backoff
the service computed (the run's heartbeat is set to when the retry is due). If the broker
refuses that retry, the items are stored as failed (the run must still end) and the task's
failure is logged.

``resume_lost_judge_runs`` runs every ``CONCORD_JUDGE_RESUME_EVERY_SECONDS`` from Celery beat
(``CELERY_BEAT_SCHEDULE``): a run none of whose batches has shown a sign of life for
``CONCORD_JUDGE_LOST_AFTER_SECONDS`` is ended and its judge started again over the items it left
(``services.judge_runs_resume_lost``), without anyone pressing start.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from celery import shared_task
from celery.exceptions import Retry
from django.conf import settings
from django.utils import timezone

from llm_judges import services

log = logging.getLogger(__name__)


@shared_task(
    bind=True,
    name="llm_judges.judge_batch",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    max_retries=None,  # bounded by the judge's max_attempts, carried in ``attempt``
    soft_time_limit=settings.CONCORD_JUDGE_SOFT_TIME_LIMIT,
    time_limit=settings.CONCORD_JUDGE_SOFT_TIME_LIMIT + 60,
)
def judge_batch(self, run_id: int, item_ids: list[int], attempt: int = 0) -> dict:
    report = services.judge_batch_process(run_id=run_id, item_ids=item_ids, attempt=attempt)
    while report.retry_item_ids and self.request.is_eager:
        # No broker (eager mode, `make run`): Celery cannot schedule a retry, so wait the
        # backoff here and try again in-process.
        time.sleep(report.countdown)
        attempt += 1
        report = services.judge_batch_process(
            run_id=run_id, item_ids=report.retry_item_ids, attempt=attempt
        )
    if report.retry_item_ids:
        log.info(
            "judge run %s: %d items hit transient errors; attempt %d in %.1f s",
            run_id,
            len(report.retry_item_ids),
            attempt + 2,
            report.countdown,
        )
        options = {"queue": settings.CONCORD_JUDGE_QUEUE} if settings.CONCORD_JUDGE_QUEUE else {}
        # The run is alive until the retry is due, though no batch of it may run meanwhile.
        services.judge_run_heartbeat(
            run_id=run_id, until=timezone.now() + timedelta(seconds=report.countdown)
        )
        try:
            retry = self.retry(
                args=(run_id, report.retry_item_ids, attempt + 1),
                kwargs={},
                countdown=report.countdown,
                throw=False,
                **options,
            )
        except Retry:  # called directly (not by a worker): Celery raises it whatever ``throw``
            raise
        except Exception as exc:  # Celery's Reject: the broker refused the retry message
            reason = getattr(exc, "reason", None) or exc
            services.judge_batch_give_up(
                run_id=run_id,
                item_ids=report.retry_item_ids,
                attempt=attempt,
                message=f"Could not queue the retry after a transient error: {reason}",
            )
            raise
        raise retry
    return {"stored": report.stored, "stopped": report.stopped}


@shared_task(name="llm_judges.resume_lost_runs", ignore_result=True)
def resume_lost_judge_runs() -> list[dict]:
    """End lost judge runs and start their judges again (see the module)."""
    return [
        {"lost_run": r.lost_run_id, "run": r.run_id, "message": r.message}
        for r in services.judge_runs_resume_lost()
    ]
