from celery import shared_task
from django.conf import settings

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


@shared_task(name="studies.prepare_export_columns")
def prepare_export_columns() -> int:
    """Periodic (``CELERY_BEAT_SCHEDULE``): queue the preparation of the stored export columns
    of every project whose answers, items or config changed since its last one; how many."""
    from studies.selectors.export_columns import projects_with_unprepared_columns

    projects = projects_with_unprepared_columns()
    # On the judges' workers (they hold the embedding model argument structure's metrics use).
    queue = {"queue": settings.CONCORD_JUDGE_QUEUE} if settings.CONCORD_JUDGE_QUEUE else {}
    for project_id in projects:
        prepare_project_export_columns.apply_async(args=[project_id], **queue)
    return len(projects)


@shared_task(
    name="studies.prepare_project_export_columns",
    acks_late=True,
    time_limit=3600,
    soft_time_limit=3500,
)
def prepare_project_export_columns(project_id: int) -> str:
    """Store one project's missing or stale export columns (safe to run twice, or twice at once:
    the second returns at once)."""
    from projects.models import Project
    from studies.services.exports import export_columns_prepare

    project = Project.objects.filter(pk=project_id).first()
    if project is None:  # deleted since it was queued
        return "gone"
    done = export_columns_prepare(project=project)
    if done.busy:
        return "busy"
    return f"{done.stored} of {done.answers} answers stored"
