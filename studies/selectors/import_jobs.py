"""Reads of import jobs: a job as the API shows it, the project page's latest jobs and their
notices, and each job's cached progress, pace and whether it looks stuck. The writes (create, run,
cancel, the stored upload) are ``studies.services.import_jobs``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NotRequired, TypedDict, cast

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max
from django.utils import timezone

from core.pace import Pace, work_pace
from projects.models import Project
from studies.models import ImportJob


def import_progress_key(*, job_id: int) -> str:
    """The cache key of a running job's progress (written by the import, read here)."""
    return f"concord:import-job:{job_id}:progress"


class ImportProgress(TypedDict):
    records: int
    created: int
    updated: int
    bytes_read: int
    bytes: int
    updated_at: str  # ISO 8601: what import_job_stalled reads


class ImportStalled(TypedDict):
    since: str  # ISO 8601
    minutes: int
    message: str


def import_job_progress(*, job: ImportJob) -> ImportProgress | None:
    """How far a running job is: records read and items created so far, bytes of the upload
    read (and the upload's size). Kept in the cache, which every web and worker process shares
    (the import's own writes are invisible until its one transaction commits)."""
    if job.status != ImportJob.Status.RUNNING:
        return None
    return cache.get(import_progress_key(job_id=job.id))


@dataclass(frozen=True)
class ImportJobRow:
    """A job on the project page: its cached ``progress`` while it runs, ``stalled`` (a
    ``{"message", "minutes"}`` when it has not moved for too long) and its ``pace``."""

    job: ImportJob
    progress: ImportProgress | None
    stalled: ImportStalled | None
    pace: Pace | None


class RecentImports(TypedDict):
    jobs: list[ImportJobRow]
    notices: list[dict[str, str]]


def import_jobs_recent(*, project: Project, count: int = 5) -> RecentImports:
    """The project's latest import jobs for its page, and the ``notices`` above them: one per
    stalled running job, one for the queue however many of its jobs wait (they wait for the
    same reason), each ``{"label", "message"}``."""
    queue_moved = functools.cache(_last_import_taken_or_finished)  # one query, when needed
    rows = []
    for job in project.import_jobs.all()[:count]:
        progress = import_job_progress(job=job)
        rows.append(
            ImportJobRow(
                job=job,
                progress=progress,
                stalled=_stalled(job, progress, queue_moved=queue_moved),
                pace=import_job_pace(job=job, progress=progress),
            )
        )
    running = [r for r in rows if r.stalled and r.job.status == ImportJob.Status.RUNNING]
    waiting = [r for r in rows if r.stalled and r.job.status == ImportJob.Status.QUEUED]
    notices = [
        {"label": r.job.filename, "message": r.stalled["message"]} for r in running if r.stalled
    ]
    if waiting:
        longest = max(waiting, key=lambda r: r.stalled["minutes"] if r.stalled else 0)
        label = f"{len(waiting)} imports" if len(waiting) > 1 else longest.job.filename
        if longest.stalled:
            notices.append({"label": label, "message": longest.stalled["message"]})
    return {"jobs": rows, "notices": notices}


def import_job_pace(*, job: ImportJob, progress: ImportProgress | None = None) -> Pace | None:
    """Elapsed time, records per second and, while it runs, the time remaining (from the bytes of
    the upload read so far) of a job that has started; from its stored times, its report and the
    cached progress (``import_job_progress``'s) alone."""
    if job.started_at is None or job.status == ImportJob.Status.QUEUED:
        return None
    if job.status == ImportJob.Status.RUNNING:
        read = (progress.get("bytes_read") if progress else 0) or 0
        size = (progress.get("bytes") if progress else 0) or job.size
        share = (size - read) / read if read and size else None
        return work_pace(
            started_at=job.started_at,
            finished_at=None,
            done=(progress.get("records") if progress else 0) or 0,
            unit="records",
            remaining_share=share,
        )
    return work_pace(
        started_at=job.started_at,
        finished_at=job.finished_at,
        done=(job.report or {}).get("records") or 0,
        unit="records",
    )


def _as_dict(pace: Pace | None) -> dict | None:
    return pace.as_dict() if pace else None


def import_job_stalled(
    *, job: ImportJob, progress: ImportProgress | None = None
) -> ImportStalled | None:
    """Whether ``job`` looks stuck, for its page and the API: queued while no worker took or
    finished any import, or running without progress (``progress``: ``import_job_progress``'s),
    for at least ``CONCORD_IMPORT_STALL_MINUTES``. ``{"since", "minutes", "message"}``, or None.

    A worker that is killed mid-import leaves its job "running": nothing of the import is saved
    (one transaction), and the broker hands the job to another worker only after its visibility
    timeout, which must outlast the longest task, so the flag says what is going on meanwhile."""
    return _stalled(job, progress, queue_moved=_last_import_taken_or_finished)


def _stalled(
    job: ImportJob, progress: ImportProgress | None, *, queue_moved: Callable[[], datetime | None]
) -> ImportStalled | None:
    now = timezone.now()
    if job.status == ImportJob.Status.QUEUED:
        since = job.created_at
        if now - since >= timedelta(minutes=settings.CONCORD_IMPORT_STALL_MINUTES):
            # Behind a backlog, the queue still moves: waiting counts from its last move.
            since = max(since, queue_moved() or since)
    elif job.status == ImportJob.Status.RUNNING:
        reported = progress.get("updated_at") if progress else None
        moments = (job.created_at, job.started_at, _parsed_time(reported) if reported else None)
        since = max(moment for moment in moments if moment is not None)
    else:
        return None
    minutes = int((now - since).total_seconds() // 60)
    if minutes < settings.CONCORD_IMPORT_STALL_MINUTES:
        return None
    if job.status == ImportJob.Status.QUEUED:
        message = (
            f"Waiting {_minutes(minutes)} for a worker, and no import has started or finished "
            "meanwhile: the workers may all be busy with other tasks, or none is running "
            "(celery -A config worker)."
        )
    else:
        redelivery = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
        message = (
            f"No progress for {_minutes(minutes)}: the worker importing this file may have "
            "stopped. Nothing of it is saved until it finishes; if its worker is gone, the "
            f"broker gives it to another worker {_minutes(redelivery // 60)} after handing it out. "
            "Cancel it if you do not want it imported then (a corrected file, say)."
        )
    return ImportStalled(since=since.isoformat(), minutes=minutes, message=message)


def _last_import_taken_or_finished() -> datetime | None:
    """When a worker last took or finished any import job (all projects share the queue)."""
    moved = ImportJob.objects.aggregate(taken=Max("started_at"), finished=Max("finished_at"))
    return max(filter(None, moved.values()), default=None)


def _minutes(count: int) -> str:
    return f"{count} minute{'' if count == 1 else 's'}"


def _parsed_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


class ImportJobSummary(TypedDict):
    """``import_job_view``'s answer; the optional keys come from the report of a finished job
    (``format`` then says the format detected, where the job's was "detect")."""

    id: int
    file: str
    format: str
    status: str
    message: str
    summary: str
    bytes: int
    progress: ImportProgress | None
    stalled: ImportStalled | None
    pace: dict[str, Any] | None
    records: NotRequired[int]
    created: NotRequired[int]
    updated: NotRequired[int]
    skipped: NotRequired[list[str]]  # the first 100 locations; skipped_count counts them all
    skipped_count: NotRequired[int]
    notes: NotRequired[dict[str, list[str]]]  # each note's first 100 locations
    note_counts: NotRequired[dict[str, int]]
    created_at: str
    started_at: str | None
    finished_at: str | None


def import_job_view(*, job: ImportJob) -> ImportJobSummary:
    """A job as the API and a refusal's ``about`` show it: its state, the cached progress while it
    runs, whether it looks stuck, its pace, and its report's figures once done."""
    progress = import_job_progress(job=job)
    view = {
        "id": job.id,
        "file": job.filename,
        "format": job.fmt,
        "status": job.status,
        "message": job.message,
        "summary": job.message if job.status == ImportJob.Status.DONE else "",
        "bytes": job.size,
        "progress": progress,
        "stalled": import_job_stalled(job=job, progress=progress),
        "pace": _as_dict(import_job_pace(job=job, progress=progress)),
        **job.report,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
    return cast(ImportJobSummary, view)  # the report's keys: ImportJobSummary's optional ones
