"""Imports as background jobs: the web request stores the upload, a Celery worker imports it.

With no broker (``make run``, tests without Redis) Celery runs the job in-process, so the caller
sees the finished job at once.
"""

from __future__ import annotations

import functools
import io
import logging
import struct
from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache
from django.core.files.uploadedfile import UploadedFile
from django.db import connection, reset_queries, transaction
from django.utils import timezone

from core.errors import Refusal
from projects.audit import AuditKind, audit_record
from projects.models import Project
from studies.models import ImportJob, ImportJobPart
from studies.selectors.import_jobs import import_job_view, import_progress_key
from studies.services.imports import ImportFailed, ImportReport, import_items
from webhooks import events as webhook_events
from webhooks.services import event_emit

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# How many record locations a finished job's report lists per note (and skipped); all counted.
LOCATIONS_LISTED = 100


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
    stale = ImportJob.objects.filter(
        status=ImportJob.Status.FAILED, created_at__lt=cutoff, parts__isnull=False
    ).distinct()
    stale_ids = list(stale.values_list("id", flat=True))
    ImportJobPart.objects.filter(job_id__in=stale_ids).delete()
    ImportJob.objects.filter(id__in=stale_ids).update(options={})
    return len(stale_ids)


def import_upload_store(*, job: ImportJob, chunks: Iterable[bytes]) -> int:
    """Store an upload as the job's parts, one ``ImportJob.PART_BYTES`` piece at a time (never
    the whole file in memory); returns its size in bytes."""
    part_bytes = ImportJob.PART_BYTES
    pending, index, size = bytearray(), 0, 0
    for chunk in chunks:
        pending += chunk
        size += len(chunk)
        while len(pending) >= part_bytes:
            _part_store(job=job, index=index, data=bytes(pending[:part_bytes]))
            del pending[:part_bytes]
            index += 1
    if pending:
        _part_store(job=job, index=index, data=bytes(pending))
    ImportJob.objects.filter(id=job.id).update(size=size)
    job.size = size
    return size


def _part_store(*, job: ImportJob, index: int, data: bytes) -> None:
    """One part of an upload: on PostgreSQL a binary ``COPY`` (the bytes as they are, where an
    INSERT sends them hex-encoded: a third of the time), elsewhere an INSERT."""
    if connection.vendor != "postgresql":
        ImportJobPart.objects.create(job=job, index=index, data=data)
        # With DEBUG on (make run), Django would keep every statement, each part included.
        reset_queries()
        return
    # COPY's binary format: signature, flags, header extension; one row of three fields
    # (bigint job, integer index, bytea data), each as its length and big-endian value; the end.
    row = struct.pack("!hiqiii", 3, 8, job.id, 4, index, len(data))
    stream = io.BytesIO(b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0) + row)
    stream.seek(0, io.SEEK_END)
    stream.write(data)
    stream.write(struct.pack("!h", -1))
    stream.seek(0)
    table = connection.ops.quote_name(ImportJobPart._meta.db_table)
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(
            f'COPY {table} ("job_id", "index", "data") FROM STDIN (FORMAT binary)', stream
        )


class _UploadReader(io.RawIOBase):
    """The job's stored upload as a binary stream, read ``READ_AHEAD`` parts per query (that
    many MiB in memory at most): an import writing in the background waits for each query."""

    READ_AHEAD = 16

    def __init__(self, job_id: int):
        self.job_id, self.index, self.position = job_id, 0, 0
        self.current, self.offset = b"", 0
        self.ahead: list[bytes] = []

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self.offset >= len(self.current):
            if not self.ahead:
                self.ahead = [
                    bytes(data)
                    for data in ImportJobPart.objects.filter(
                        job_id=self.job_id,
                        index__gte=self.index,
                        index__lt=self.index + self.READ_AHEAD,
                    )
                    .order_by("index")
                    .values_list("data", flat=True)
                ]
                self.ahead.reverse()
                if not self.ahead:
                    return 0
            self.current, self.offset, self.index = self.ahead.pop(), 0, self.index + 1
        count = min(len(buffer), len(self.current) - self.offset)
        buffer[:count] = self.current[self.offset : self.offset + count]
        self.offset += count
        self.position += count
        return count


def import_upload_stream(*, job: ImportJob) -> io.BufferedReader[_UploadReader]:
    """The stored upload of ``job``, streamed from its parts."""
    return io.BufferedReader(_UploadReader(job.id), buffer_size=64 * 1024)


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
    )
    import_upload_store(job=job, chunks=_upload_chunks(uploaded_file))
    transaction.on_commit(functools.partial(_enqueue, job.id))
    return job


QUEUE_UNAVAILABLE = (
    "Nothing imported: the import could not be queued (the task queue is unavailable). "
    "Upload the file again once it is back."
)


def _enqueue(job_id: int) -> None:
    """Queue the job's import. A broker that cannot be reached (bounded by the broker timeouts
    in settings) fails the job with the reason at once, never leaving it queued for a worker
    that will not get it, and refuses the upload with a 503 (code ``unavailable``)."""
    from kombu.exceptions import OperationalError

    from studies.celery_tasks import run_import_job

    try:
        run_import_job.delay(job_id)
    except OperationalError as exc:  # connection refused, timed out, unknown host
        log.warning("import job %s could not be queued: %s", job_id, exc)
        ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED).update(
            status=ImportJob.Status.FAILED, message=QUEUE_UNAVAILABLE, finished_at=timezone.now()
        )
        job = ImportJob.objects.get(pk=job_id)
        raise ImportFailed(
            QUEUE_UNAVAILABLE, code="unavailable", about=dict(import_job_view(job=job))
        ) from None


def _upload_chunks(uploaded_file) -> Iterable[bytes]:
    if hasattr(uploaded_file, "chunks"):  # Django's uploads: memory or a temporary file
        yield from uploaded_file.chunks(chunk_size=ImportJob.PART_BYTES)
        return
    while chunk := uploaded_file.read(ImportJob.PART_BYTES):
        yield chunk


def import_job_run(*, job_id: int, redelivered: bool = False) -> ImportJob:
    """Run a queued job. Idempotent: a job already taken by another worker, or a redelivered
    message for a finished job, is left alone. A redelivered message for a job still marked
    running means its worker died mid-import (the import is one transaction, so nothing of it
    was written): the job runs again."""
    claimable = [ImportJob.Status.QUEUED]
    if redelivered:
        claimable.append(ImportJob.Status.RUNNING)
    claimed = ImportJob.objects.filter(id=job_id, status__in=claimable).update(
        status=ImportJob.Status.RUNNING, started_at=timezone.now()
    )
    job = ImportJob.objects.select_related("project").get(id=job_id)
    if not claimed:
        if job.status == ImportJob.Status.CANCELLED:  # its upload is not needed any more
            ImportJobPart.objects.filter(job=job).delete()
        return job
    upload = import_upload_stream(job=job)

    def progress(report: ImportReport) -> None:
        # Between chunks: a researcher's cancel stops the import (its transaction rolls back).
        if _cancel_requested(job.id):
            raise ImportCancelled
        cache.set(
            import_progress_key(job_id=job.id),
            {
                "records": report.records,
                "created": report.created,
                "updated": report.updated,
                "bytes_read": upload.raw.position,
                "bytes": job.size,
                "updated_at": timezone.now().isoformat(),  # what import_job_stalled reads
            },
            timeout=24 * 3600,
        )

    try:
        report = import_items(
            project=job.project,
            stream=upload,
            fmt=job.fmt,
            update=job.update,
            options=job.options or None,
            progress=progress,
            by=job.created_by,
            source=job.filename,
        )
    except ImportCancelled:
        return _stopped_by_a_cancel(job)
    except ImportFailed as exc:
        job.status, job.message = ImportJob.Status.FAILED, str(exc)
    except Exception as exc:  # recorded for the researcher, then re-raised for the worker's log
        job.status, job.message = (
            ImportJob.Status.FAILED,
            f"Nothing imported. Unexpected error: {exc!r}",
        )
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "message", "finished_at"])
        _announce_finished(job)
        raise
    else:
        job.status, job.message = ImportJob.Status.DONE, report.summary()
        job.report = {
            "format": report.fmt,  # the format detected, where the job's is "detect"
            "records": report.records,
            "created": report.created,
            "updated": report.updated,
            # Locations listed up to LOCATIONS_LISTED, counted in full: a note on every record of
            # a 100k file made each poll of the job 1.3 MB (found by an outside probe).
            "skipped": report.skipped[:LOCATIONS_LISTED],
            "skipped_count": len(report.skipped),
            "notes": {note: where[:LOCATIONS_LISTED] for note, where in report.notes.items()},
            "note_counts": {note: len(where) for note, where in report.notes.items()},
        }
        ImportJobPart.objects.filter(job=job).delete()  # the upload is not kept after success
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "message", "report", "finished_at"])
    cache.delete(import_progress_key(job_id=job.id))
    _announce_finished(job)
    return job


def _stopped_by_a_cancel(job: ImportJob) -> ImportJob:
    """The import rolled back at a researcher's cancel (recorded by ``import_job_cancel``)."""
    ImportJob.objects.filter(id=job.id, status=ImportJob.Status.RUNNING).update(
        status=ImportJob.Status.CANCELLED, finished_at=timezone.now()
    )
    ImportJobPart.objects.filter(job=job).delete()
    cache.delete(import_progress_key(job_id=job.id))
    job.refresh_from_db()
    return job


class ImportCancelled(Exception):
    """Raised between chunks of a running import whose job a researcher cancelled."""


def _cancel_requested(job_id: int) -> bool:
    """Whether a researcher cancelled the job (read between chunks, from the committed row)."""
    return ImportJob.objects.filter(id=job_id, status=ImportJob.Status.CANCELLED).exists()


def import_job_cancel(*, job: ImportJob, by: User) -> ImportJob:
    """Cancel a queued or running import: nothing of it is imported, and a worker that takes it
    later (a broker's re-delivery after a worker died) leaves it alone. A running import stops
    at its next chunk and rolls back. Refuses (409) a job that has finished."""
    with transaction.atomic():
        cancelled = ImportJob.objects.filter(
            id=job.id, status__in=(ImportJob.Status.QUEUED, ImportJob.Status.RUNNING)
        ).update(
            status=ImportJob.Status.CANCELLED,
            message=f"Cancelled by {by.get_username()}: nothing of this file is imported.",
            finished_at=timezone.now(),
        )
        job.refresh_from_db()
        if not cancelled:
            raise Refusal(
                f"This import has finished ({job.get_status_display().lower()}); only a queued "
                "or running import can be cancelled.",
                code="conflict",
            )
        audit_record(
            project=job.project,
            actor=by,
            kind=AuditKind.IMPORT_CANCELLED,
            summary=f"Cancelled the import of {job.filename}.",
            changes={"job": job.id, "source": job.filename},
        )
    return job


def _announce_finished(job: ImportJob) -> None:
    """``import.finished`` to the project's webhooks (done or failed, with the counts)."""
    report = job.report or {}
    event_emit(
        project_id=job.project_id,
        event=webhook_events.IMPORT_FINISHED,
        data={
            "job": job.pk,
            "status": job.status,
            "message": job.message[:2000],
            "filename": job.filename,
            "format": job.fmt,
            **{
                k: report.get(k)
                for k in ("records", "created", "updated", "skipped", "skipped_count")
            },
        },
    )
