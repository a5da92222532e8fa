"""Imports as background jobs: the web request stores the upload, a Celery worker imports it.

With no broker (``make run``, tests without Redis) Celery runs the job in-process, so the caller
sees the finished job at once.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from projects.models import ImportJob, Project
from studies.services.imports import ImportFailed, import_items

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def import_job_create(
    *,
    project: Project,
    user: User,
    uploaded_file: UploadedFile,
    fmt: str,
    update: bool = False,
    mapping_file: UploadedFile | None = None,
) -> ImportJob:
    """Store the upload (and the optional mapping file some formats take, as text) and enqueue
    its import once the transaction commits."""
    options = {}
    if mapping_file is not None:
        options["mapping"] = mapping_file.read().decode("utf-8-sig")
    job = ImportJob.objects.create(
        project=project,
        created_by=user,
        filename=getattr(uploaded_file, "name", "upload")[:255],
        fmt=fmt,
        update=update,
        options=options,
        content=uploaded_file.read(),
    )
    from studies.celery_tasks import run_import_job

    transaction.on_commit(lambda: run_import_job.delay(job.id))
    return job


def import_job_run(*, job_id: int, redelivered: bool = False) -> ImportJob:
    """Run a queued job. Idempotent: a job already taken by another worker, or a redelivered
    message for a finished job, is left alone. A redelivered message for a job still marked
    running means its worker died mid-import (the import is one transaction, so nothing of it
    was written): the job runs again."""
    claimable = [ImportJob.Status.QUEUED]
    if redelivered:
        claimable.append(ImportJob.Status.RUNNING)
    claimed = ImportJob.objects.filter(id=job_id, status__in=claimable).update(
        status=ImportJob.Status.RUNNING
    )
    job = ImportJob.objects.select_related("project").get(id=job_id)
    if not claimed:
        return job
    try:
        report = import_items(
            project=job.project,
            stream=io.BytesIO(bytes(job.content)),
            fmt=job.fmt,
            update=job.update,
            options=job.options or None,
        )
    except ImportFailed as exc:
        job.status, job.message = ImportJob.Status.FAILED, str(exc)
    except Exception as exc:  # recorded for the researcher, then re-raised for the worker's log
        job.status, job.message = (
            ImportJob.Status.FAILED,
            f"Nothing imported. Unexpected error: {exc!r}",
        )
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "message", "finished_at"])
        raise
    else:
        job.status, job.message = ImportJob.Status.DONE, report.summary()
        job.report = {
            "records": report.records,
            "created": report.created,
            "updated": report.updated,
            "skipped": report.skipped,
        }
        job.content = b""
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "message", "report", "content", "finished_at"])
    return job


def import_job_view(*, job: ImportJob) -> dict:
    return {
        "id": job.id,
        "file": job.filename,
        "format": job.fmt,
        "status": job.status,
        "message": job.message,
        "summary": job.message if job.status == ImportJob.Status.DONE else "",
        **job.report,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
