"""Imports as background jobs: the web request stores the upload, a Celery worker imports it.

With no broker (``make run``, tests without Redis) Celery runs the job in-process, so the caller
sees the finished job at once.
"""

from __future__ import annotations

import io
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from core.errors import Refusal
from projects.models import ImportJob, Project
from studies.services.imports import ImportFailed, import_items

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def upload_size_check(*, upload: UploadedFile | None, field: str) -> None:
    """Refuse (413, the limit in the message) an upload larger than the configured limit."""
    limit = settings.CONCORD_MAX_UPLOAD_BYTES
    if upload is not None and (upload.size or 0) > limit:
        raise Refusal(
            f"The {field} is {upload.size:,} bytes; uploads are limited to {limit:,} bytes "
            f"({limit / 2**20:.0f} MiB, setting CONCORD_MAX_UPLOAD_BYTES).",
            code="too_large",
            field=field,
        )


def failed_import_content_purge(*, older_than_days: int | None = None) -> int:
    """Clear the stored upload of failed import jobs older than the retention period (setting
    ``CONCORD_FAILED_IMPORT_RETENTION_DAYS``); the job, its file name and its error stay.
    Returns how many jobs were cleared."""
    days = (
        settings.CONCORD_FAILED_IMPORT_RETENTION_DAYS
        if older_than_days is None
        else older_than_days
    )
    cutoff = timezone.now() - timedelta(days=days)
    stale = ImportJob.objects.filter(status=ImportJob.Status.FAILED, created_at__lt=cutoff)
    return stale.exclude(content=b"").update(content=b"", options={})


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
    its import once the transaction commits. Refused (413) above ``CONCORD_MAX_UPLOAD_BYTES``;
    a mapping file that is not UTF-8 text is refused (400) before anything is stored."""
    for field, upload in (("file", uploaded_file), ("mapping", mapping_file)):
        upload_size_check(upload=upload, field=field)
    options = {}
    if mapping_file is not None:
        try:
            options["mapping"] = mapping_file.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Refusal(
                f"The mapping file is not UTF-8 text (byte {exc.start}).", field="mapping"
            ) from None
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
            "notes": report.notes,
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
