from celery import shared_task

from projects.services.import_jobs import import_job_run


@shared_task(name="projects.run_import_job", acks_late=True, time_limit=3600, soft_time_limit=3500)
def run_import_job(job_id: int) -> str:
    """Import one uploaded file (see ``import_job_run``; safe to run twice)."""
    return import_job_run(job_id=job_id).status
