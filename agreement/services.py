"""Writes of the agreement app: request, compute and retry cached reports (snapshots).

Two kinds of snapshot follow the same rules: the dashboard's report (:func:`snapshot_request`)
and the judge validation page's figures, one per subset (:func:`judge_validation_request`).

The caching rule: a report is identified by the project, a digest of the coder filter and
options (``filter_key``) and a digest of that plus the project's data version (``key``; see
:func:`agreement.reports.gather.data_version`). A request

1. returns the done snapshot with the current key if there is one (fresh);
2. otherwise joins the computation under way for this filter, if any (never a second one: the
   partial unique constraint of :class:`AgreementSnapshot` allows one pending or running row per
   project and filter), re-queueing it only when it is stale (queued or started longer ago than
   the task's time limit: its worker died or its message was lost);
3. otherwise creates a pending snapshot and computes it inline (small projects, the command) or
   queues the Celery task after the transaction commits.

If the task cannot be queued (the broker, Redis, is down) the snapshot is marked failed at once
with the error and no start time — it never stays pending with nothing queued — and the page
keeps showing the last report with a "could not queue the update" note. Such a never-started
failure (:attr:`AgreementSnapshot.never_queued`) is queued again by the next request; a
computation that failed on its data waits for the researcher's Retry.

Meanwhile the newest done snapshot of the same filter (an older data version) is still shown,
marked as out of date. A worker claims a snapshot with a conditional UPDATE (pending → running),
so a redelivered message (``acks_late``) never computes it twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from agreement.models import AgreementSnapshot
from agreement.reports import build_report
from agreement.reports.gather import data_version, gather
from agreement.reports.inputs import AnnotatorFilter, ReportOptions, filter_key
from agreement.reports.page import is_current, report_page
from agreement.selectors import median_times_s
from projects.models import Project
from webhooks import events as webhook_events
from webhooks.services import event_emit

log = logging.getLogger(__name__)

Status = AgreementSnapshot.Status
Kind = AgreementSnapshot.Kind

# The Celery task's limits (agreement.celery_tasks); a snapshot queued or running for longer
# than STALE_AFTER is considered abandoned.
TIME_LIMIT_S = 600
SOFT_TIME_LIMIT_S = 570
STALE_AFTER = timedelta(seconds=TIME_LIMIT_S + 60)
QUEUE_FAILED = (
    "Could not queue the update: the task queue is unavailable. It is queued again on the next"
    " visit of this page."
)


def inline_max_answers() -> int:
    """Projects with at most this many annotation rows are computed inside the request."""
    return int(getattr(settings, "CONCORD_AGREEMENT_INLINE_MAX_ANSWERS", 3000))


@dataclass
class SnapshotState:
    """What the dashboard shows for one project and filter.

    ``snapshot``: the newest done snapshot (``fresh`` when it matches the current data);
    ``active``: the computation under way, if any; ``failed``: the failed snapshot of the current
    data, if any (retry with :func:`snapshot_retry`).
    """

    snapshot: AgreementSnapshot | None
    fresh: bool
    active: AgreementSnapshot | None
    failed: AgreementSnapshot | None
    answers: int

    @property
    def report(self) -> dict | None:
        """The full report (loaded from the database on first use when the state was read for
        the page only)."""
        return self.snapshot.result if self.snapshot is not None else None

    @property
    def page(self) -> dict | None:
        """What the dashboard shows (:mod:`agreement.reports.page`): stored with the report;
        built from the report only for snapshots computed before pages were stored."""
        if self.snapshot is None:
            return None
        if is_current(self.snapshot.page):
            return self.snapshot.page
        return report_page(self.snapshot.result or {})


def _key(fkey: str, version: dict) -> str:
    text = json.dumps({"filter": fkey, "data": version}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:48]


def _state(project: Project, fkey: str, key: str, answers: int, load: str) -> SnapshotState:
    rows = list(
        AgreementSnapshot.objects.filter(project=project, filter_key=fkey)
        .defer("result", "page")
        .order_by("-created_at", "-id")
    )
    current = next((s for s in rows if s.key == key), None)
    active = next((s for s in rows if s.status in AgreementSnapshot.ACTIVE), None)
    done = next((s for s in rows if s.status == Status.DONE), None)
    if done is not None:
        # With its result, or with its page only (the result then loads on first use).
        other = "page" if load == "result" else "result"
        done = AgreementSnapshot.objects.defer(other).get(pk=done.pk)
    return SnapshotState(
        snapshot=done,
        fresh=done is not None and done.key == key,
        active=active,
        failed=current if current is not None and current.status == Status.FAILED else None,
        answers=answers,
    )


def snapshot_request(
    *,
    project: Project,
    annotator_filter: AnnotatorFilter,
    options: ReportOptions,
    inline: bool | None = None,
    load: str = "result",
) -> SnapshotState:
    """The dashboard's report for ``project``: cached, joined, or started (see module docstring).

    ``inline`` forces (True) or forbids (False) computing inside this call; by default projects
    with at most :func:`inline_max_answers` answers (current and external) compute inline. ``load``: "result"
    reads the done snapshot's full report, "page" only what the dashboard shows of it
    (:attr:`SnapshotState.page`), so that a page view never reads a large report.
    """
    if load not in ("result", "page"):
        raise ValueError(f"load must be 'result' or 'page', got {load!r}")
    return _request(
        project=project,
        kind=Kind.REPORT,
        fkey=filter_key(annotator_filter, options),
        version=data_version(project, options),
        stored={"annotator_filter": asdict(annotator_filter), "options": asdict(options)},
        inline=inline,
        load=load,
    )


def judge_validation_request(
    *,
    project: Project,
    subset: str = "all",
    n_boot: int = 1000,
    confidence: float = 0.95,
    inline: bool | None = None,
) -> SnapshotState:
    """The judge validation page's figures for ``subset`` (``result["validation"]``: as
    :func:`agreement.selectors.judge_validation` returns them; ``result["need"]``: the pilots
    of its labels-needed projection, :func:`agreement.selectors.need_pilots`), cached per data
    version by the rules of the dashboard's report (module docstring): fresh, joined, computed
    inline on a small project, else queued while the last figures are shown as out of date.

    Raises ``ValueError`` for a subset the task type does not offer, before anything is stored.
    """
    from agreement.reports.sections import judge_validation_for
    from agreement.reports.validation import check_subset

    check_subset(judge_validation_for(project.task_type), subset)
    options = {"subset": subset, "n_boot": n_boot, "confidence": confidence}
    text = json.dumps({"kind": Kind.JUDGE_VALIDATION, **options}, sort_keys=True)
    return _request(
        project=project,
        kind=Kind.JUDGE_VALIDATION,
        fkey=hashlib.sha256(text.encode()).hexdigest()[:32],
        version=data_version(project),
        stored={"annotator_filter": {}, "options": options},
        inline=inline,
        load="result",
    )


def _request(
    *,
    project: Project,
    kind: str,
    fkey: str,
    version: dict,
    stored: dict,
    inline: bool | None,
    load: str,
) -> SnapshotState:
    key = _key(fkey, version)
    answers = version["answers"]
    state = _state(project, fkey, key, answers, load)
    if (
        state.failed is not None
        and state.failed.never_queued
        and snapshot_retry(snapshot=state.failed)
    ):
        return _state(project, fkey, key, answers, load)
    if state.fresh or state.failed is not None:
        return state
    if state.active is not None:
        _requeue_if_stale(state.active)
        return state
    try:
        with transaction.atomic():
            snapshot = AgreementSnapshot.objects.create(
                project=project,
                kind=kind,
                filter_key=fkey,
                key=key,
                data_version=version,
                answers=answers,
                status=Status.PENDING,
                queued_at=timezone.now(),
                **stored,
            )
    except IntegrityError:
        # Another request created this key or started a computation for this filter first.
        return _state(project, fkey, key, answers, load)
    if inline if inline is not None else answers <= inline_max_answers():
        snapshot_compute(snapshot_id=snapshot.pk)
    else:
        _enqueue(snapshot.pk)
    return _state(project, fkey, key, answers, load)


def _enqueue(snapshot_id: int) -> None:
    transaction.on_commit(partial(_send, snapshot_id))


def _send(snapshot_id: int) -> None:
    """Queue the task; if the broker refuses, mark the snapshot failed (never queued) at once."""
    from agreement.celery_tasks import compute_snapshot

    try:
        compute_snapshot.delay(snapshot_id)
    except Exception as exc:  # kombu OperationalError, redis errors, timeouts: the broker is away
        log.warning("agreement snapshot %s could not be queued: %s", snapshot_id, exc)
        AgreementSnapshot.objects.filter(pk=snapshot_id, status=Status.PENDING).update(
            status=Status.FAILED,
            started_at=None,
            finished_at=timezone.now(),
            error=f"{QUEUE_FAILED} ({type(exc).__name__}: {exc})"[:2000],
        )


def _requeue_if_stale(snapshot: AgreementSnapshot) -> bool:
    """Queue an abandoned computation again; only one of several concurrent callers does."""
    cutoff = timezone.now() - STALE_AFTER
    revived = AgreementSnapshot.objects.filter(
        Q(status=Status.PENDING, queued_at__lt=cutoff)
        | Q(status=Status.RUNNING, started_at__lt=cutoff),
        pk=snapshot.pk,
    ).update(status=Status.PENDING, queued_at=timezone.now(), started_at=None)
    if revived:
        log.warning("agreement snapshot %s was abandoned; queued again", snapshot.pk)
        _enqueue(snapshot.pk)
    return bool(revived)


def snapshot_retry(*, snapshot: AgreementSnapshot) -> bool:
    """Queue a failed snapshot again. False if it is not failed or another computation for the
    same filter is under way (the one-active constraint)."""
    try:
        with transaction.atomic():
            revived = AgreementSnapshot.objects.filter(pk=snapshot.pk, status=Status.FAILED).update(
                status=Status.PENDING, queued_at=timezone.now(), error="", started_at=None
            )
    except IntegrityError:
        return False
    if revived:
        _enqueue(snapshot.pk)
    return bool(revived)


def snapshot_retry_in(*, project: Project, snapshot_id: str) -> bool:
    """Retry the project's failed snapshot named by ``snapshot_id`` (as a form sends it: text; a
    value that is not a number, or another project's snapshot, retries nothing)."""
    snapshot = AgreementSnapshot.objects.filter(
        project=project, pk=int(snapshot_id) if snapshot_id.isdecimal() else 0
    ).first()
    return snapshot is not None and snapshot_retry(snapshot=snapshot)


def snapshot_compute(*, snapshot_id: int) -> str:
    """Compute a pending snapshot; returns "done", "failed" or "skipped" (already claimed).

    The claim is a conditional UPDATE, so two workers (or a redelivered message) never compute
    the same snapshot twice; a running snapshot older than STALE_AFTER may be claimed again.
    """
    now = timezone.now()
    claimed = AgreementSnapshot.objects.filter(
        Q(status=Status.PENDING) | Q(status=Status.RUNNING, started_at__lt=now - STALE_AFTER),
        pk=snapshot_id,
    ).update(status=Status.RUNNING, started_at=now)
    if not claimed:
        return "skipped"
    snapshot = AgreementSnapshot.objects.select_related("project").get(pk=snapshot_id)
    try:
        result, page = _computed(snapshot)
    except Exception as exc:
        # Deterministic failures (bad data) would fail again: record them instead of retrying.
        log.exception("agreement snapshot %s failed", snapshot_id)
        AgreementSnapshot.objects.filter(pk=snapshot_id, started_at=now).update(
            status=Status.FAILED, error=_error_text(exc), finished_at=timezone.now()
        )
        return "failed"
    finished = AgreementSnapshot.objects.filter(
        pk=snapshot_id, status=Status.RUNNING, started_at=now
    ).update(status=Status.DONE, result=result, page=page, finished_at=timezone.now(), error="")
    if finished:
        # Older reports of this filter are superseded; keep only the newest.
        AgreementSnapshot.objects.filter(
            project_id=snapshot.project_id,
            filter_key=snapshot.filter_key,
            status__in=(Status.DONE, Status.FAILED),
            created_at__lte=snapshot.created_at,
        ).exclude(pk=snapshot_id).delete()
    if finished and snapshot.kind == Kind.REPORT:
        event_emit(
            project_id=snapshot.project_id,
            event=webhook_events.AGREEMENT_SNAPSHOT_READY,
            data={
                "snapshot": snapshot_id,
                "answers": snapshot.answers,
                "data_version": snapshot.data_version,
                "annotator_filter": snapshot.annotator_filter,
                "page": f"/p/{snapshot.project.slug}/agreement/",
            },
        )
    return "done" if finished else "skipped"


def _computed(snapshot: AgreementSnapshot) -> tuple[dict, dict | None]:
    """The snapshot's result and page, computed from the data now."""
    if snapshot.kind == Kind.JUDGE_VALIDATION:
        from agreement.selectors import judge_validation_figures

        return judge_validation_figures(project=snapshot.project, **snapshot.options), None
    annotator_filter = _filter_from_json(snapshot.annotator_filter)
    options = ReportOptions(**snapshot.options)
    report_input = gather(
        project=snapshot.project, annotator_filter=annotator_filter, options=options
    )
    result = build_report(report_input, annotator_filter)
    del report_input
    page = report_page(result)
    # The progress table's one figure that reads every answer, as of this report.
    page["median_times"] = median_times_s(project=snapshot.project)
    return result, page


def _error_text(exc: Exception) -> str:
    from celery.exceptions import SoftTimeLimitExceeded

    if isinstance(exc, SoftTimeLimitExceeded):
        return f"The computation took longer than {SOFT_TIME_LIMIT_S} s and was stopped."
    return f"{type(exc).__name__}: {exc}"[:2000]


def _filter_from_json(data: dict) -> AnnotatorFilter:
    include = data.get("include")
    return AnnotatorFilter(
        include=tuple(include) if include is not None else None,
        exclude=tuple(data.get("exclude", ())),
        exclude_disqualified=bool(data.get("exclude_disqualified", True)),
        judges=tuple(data.get("judges", ())),
    )
