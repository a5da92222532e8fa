from celery import shared_task

from studies.services.import_jobs import failed_import_content_purge, import_job_run


@shared_task(
    bind=True,
    name="projects.run_import_job",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=3600,
    soft_time_limit=3500,
)
def run_import_job(self, job_id: int) -> str:
    """Import one uploaded file (see ``import_job_run``; safe to run twice)."""
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    return import_job_run(job_id=job_id, redelivered=redelivered).status


@shared_task(name="studies.purge_failed_imports")
def purge_failed_imports() -> int:
    """Daily (``CELERY_BEAT_SCHEDULE``): clear the uploads of old failed import jobs."""
    return failed_import_content_purge()


@shared_task(
    name="studies.refresh_item_figures", acks_late=True, time_limit=660, soft_time_limit=600
)
def refresh_item_figures(project_id: int) -> str:
    """Recompute the item browser's per-item figures of one project (safe to run twice)."""
    from studies.services.item_figures import item_figures_run

    return item_figures_run(project_id=project_id)
