"""Reads for researchers: quality control per annotator, and who finished what (for payment);
and the scope of a crowd login (``in_current_session``).

The researcher reads take a fixed number of queries whatever the number of annotators (grouped
aggregates joined in Python), so the pages and exports stay fast as a crowd study grows.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import Avg, CharField, Count, Exists, OuterRef, Q, QuerySet, Sum, Value
from django.db.models.functions import Concat

from annotation.models import Annotation, Assignment, Batch, Item
from crowd.models import CrowdEntry
from crowd.models import PlatformAction as CrowdAction
from projects.crowd import CrowdSettings, crowd_settings
from projects.models import Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import User

Qualification = Membership.Qualification


def in_current_session(assignments: QuerySet[Assignment], *, user: User) -> QuerySet[Assignment]:
    """``assignments`` (of ``user``) narrowed to what a crowd login may reach: in a project where
    the user has platform sessions, only the work of their open session: its own main batch
    (``Batch.external_ref`` is the session's ``batch_ref``), and assignments without a session
    reference (qualification rounds, items dealt one at a time) reserved since that session
    began. Anything of an earlier, closed session stays out of reach, so someone who opened a
    session with a worker's id cannot read or revise that worker's earlier answers.

    Users without platform sessions in the project (everyone who logs in with a password) are
    not narrowed. One SQL query whatever the caller does with it (EXISTS subqueries).

    The scope is the account's open session, not the browser's: opening a new session closes
    the others and logs their browsers out (``crowd.services.worker_enter``), so every browser
    still logged in to the account is in the open session.

    An account with a usable password is never entered from a link (``crowd.services`` refuses
    it), so it has no session to be narrowed to and its reads get no subqueries (most requests:
    every researcher's and every password annotator's)."""
    if user.has_usable_password():
        return assignments
    entries = CrowdEntry.objects.filter(user=user, project=OuterRef("project_id"))
    current = entries.filter(closed_at__isnull=True)
    own_batch = current.annotate(
        ref=Concat("platform", Value(":"), "session_id", output_field=CharField())
    ).filter(ref=OuterRef("batch__external_ref"))
    since_it_began = current.filter(created_at__lte=OuterRef("reserved_at"))
    unbound = Q(batch__isnull=True) | Q(batch__external_ref="")
    return assignments.filter(
        ~Exists(entries) | Exists(own_batch) | (unbound & Exists(since_it_began))
    )


def _control_stats(project) -> dict[int, tuple[int, int]]:
    rows = (
        # the item's project too: the controls are read by ``item_queue_idx`` (project, kind),
        # not every project's controls by kind
        Assignment.objects.filter(
            project=project,
            item__project=project,
            item__kind=Item.Kind.CONTROL,
            correct__isnull=False,
        )
        .values("annotator_id")
        .annotate(answered=Count("id"), right=Count("id", filter=Q(correct=True)))
    )
    return {r["annotator_id"]: (r["answered"], r["right"]) for r in rows}


def _qualification_rounds(project) -> dict[int, list[dict]]:
    """Per annotator, their qualification rounds in order: state, score and active time."""
    scores = {
        r["batch_id"]: r
        for r in Assignment.objects.filter(project=project, batch__kind=Batch.Kind.QUALIFICATION)
        .values("batch_id")
        .annotate(total=Count("id"), right=Count("id", filter=Q(correct=True)))
    }
    times = dict(
        Annotation.objects.filter(
            assignment__project=project, assignment__batch__kind=Batch.Kind.QUALIFICATION
        )
        .values("assignment__batch_id")
        .annotate(ms=Sum("time_spent_ms"))
        .values_list("assignment__batch_id", "ms")
    )
    rounds: dict[int, list[dict]] = defaultdict(list)
    for batch in Batch.objects.filter(project=project, kind=Batch.Kind.QUALIFICATION).order_by(
        "number"
    ):
        score = scores.get(batch.id, {"total": 0, "right": 0})
        rounds[batch.annotator_id].append(
            {
                "number": batch.number,
                "state": batch.state,
                "right": score["right"],
                "total": score["total"],
                "seconds": round((times.get(batch.id) or 0) / 1000),
            }
        )
    return rounds


class AnnotatorQuality(TypedDict):
    membership: Membership
    username: str
    pseudonym: str
    qualification: str
    qualification_label: str
    reason: str
    by_researcher: bool
    feedback: str
    controls_answered: int
    controls_right: int
    accuracy: float | None
    below_threshold: bool
    rounds: list[dict]
    answers: int
    mean_seconds: float | None
    fast_answers: int
    batches_finished: int
    batches_open: int
    excluded: bool


class QualityOverview(TypedDict):
    crowd: CrowdSettings
    annotators: list[AnnotatorQuality]
    controls: int
    qualification_items: int
    disqualified: int


def answer_figures(*, project: Project, fast_ms: int) -> dict[int, dict[str, Any]]:
    """Per annotator, over their current answers to regular items: ``n``, ``mean_ms`` (the mean
    active time) and ``fast`` (answers under ``fast_ms``; 0 when it is 0). One query, which
    reads every answer: the quality page reads these cached (``crowd.quality_figures``)."""
    measures = {"n": Count("id"), "mean_ms": Avg("time_spent_ms")}
    if fast_ms:  # answers given faster than the project's minimum time per item
        measures["fast"] = Count("id", filter=Q(time_spent_ms__lt=fast_ms))
    rows = (
        Annotation.objects.filter(
            item__project=project, is_current=True, item__kind=Item.Kind.REGULAR
        )
        .values("annotator_id")
        .annotate(**measures)
    )
    figures: dict[int, dict[str, Any]] = {}
    for found in rows:
        row: dict[str, Any] = dict(found)
        mean_ms = row["mean_ms"]
        figures[row["annotator_id"]] = {
            "n": row["n"],
            "mean_ms": float(mean_ms) if mean_ms is not None else None,
            "fast": row.get("fast", 0),
        }
    return figures


def quality_overview(
    *, project: Project, answers: dict[int, dict[str, Any]] | None = None
) -> QualityOverview:
    """Every annotator with their qualification state, accuracy on controls, qualification rounds,
    answers, batches and active time, plus the project's crowd settings. ``answers``: the
    per-annotator answer figures of :func:`answer_figures` as cached for the page (read from
    the answers when not given)."""
    crowd = crowd_settings(project)
    controls = _control_stats(project)
    rounds = _qualification_rounds(project)
    if answers is None:
        answers = answer_figures(project=project, fast_ms=crowd.min_seconds_per_item * 1000)
    batches: defaultdict[int, dict[str, int]] = defaultdict(dict)
    for row in (
        Batch.objects.filter(project=project, kind=Batch.Kind.MAIN)
        .values("annotator_id", "state")
        .annotate(n=Count("id"))
    ):
        batches[row["annotator_id"]][row["state"]] = row["n"]
    members = (
        Membership.objects.filter(project=project, role=Membership.Role.ANNOTATOR)
        .select_related("user")
        .order_by("user__username")
    )
    people: list[AnnotatorQuality] = []
    for m in members:
        answered, right = controls.get(m.user_id, (0, 0))
        given = answers.get(m.user_id, {})
        people.append(
            {
                "membership": m,
                "username": m.user.username,
                "pseudonym": m.pseudonym,
                "qualification": m.qualification,
                "qualification_label": m.get_qualification_display(),
                "reason": m.get_qualification_reason_display() if m.qualification_reason else "",
                "by_researcher": m.qualification_by_researcher,
                "feedback": m.feedback,
                "controls_answered": answered,
                "controls_right": right,
                "accuracy": right / answered if answered else None,
                "below_threshold": bool(answered) and right / answered < crowd.accuracy_threshold,
                "rounds": rounds.get(m.user_id, []),
                "answers": given.get("n", 0),
                "mean_seconds": round(given["mean_ms"] / 1000, 1)
                if given.get("mean_ms") is not None
                else None,
                "fast_answers": given.get("fast", 0),
                "batches_finished": batches[m.user_id].get(Batch.State.FINISHED, 0),
                "batches_open": batches[m.user_id].get(Batch.State.OPEN, 0),
                "excluded": m.qualification == Qualification.DISQUALIFIED,
            }
        )
    return {
        "crowd": crowd,
        "annotators": people,
        "controls": Item.objects.filter(project=project, kind=Item.Kind.CONTROL).count(),
        "qualification_items": Item.objects.filter(
            project=project, kind=Item.Kind.QUALIFICATION
        ).count(),
        "disqualified": sum(p["excluded"] for p in people),
    }


PAYMENT_COLUMNS = [
    "platform",
    "worker_id",
    "study_id",
    "session_id",
    "hit_id",
    "annotator",
    "entered_at",
    "batch_state",
    "completion_code",
    "items_in_batch",
    "items_submitted",
    "finished_at",
    "active_minutes",
    "reported_minutes",
    "controls_answered",
    "controls_right",
    "qualification",
    "passed_qc",
    "currency",
    "reward",
    "bonus",
    "total",
]
PROLIFIC_BONUS_COLUMNS = ["participant_id", "amount"]


class PaymentRow(TypedDict):
    """One crowd-platform session (``PAYMENT_COLUMNS``, in order)."""

    platform: str
    worker_id: str
    study_id: str
    session_id: str
    hit_id: str
    annotator: str  # pseudonym
    entered_at: str  # ISO 8601
    batch_state: str
    completion_code: str
    items_in_batch: int
    items_submitted: int
    finished_at: str  # ISO 8601, or ""
    active_minutes: float
    reported_minutes: float
    controls_answered: int
    controls_right: int
    qualification: str
    passed_qc: bool
    currency: str
    reward: str  # decimal, two places
    bonus: str
    total: str


class ProlificBonusRow(TypedDict):
    participant_id: str
    amount: str


def payment_rows(*, project: Project) -> list[PaymentRow]:
    """One row per crowd-platform session: who, which batch, whether and when it was finished,
    its completion code, active time, accuracy on controls and whether the worker passed quality
    control (not disqualified, and qualified where the project requires it)."""
    crowd = crowd_settings(project)
    entries = list(CrowdEntry.objects.filter(project=project).order_by("created_at", "id"))
    refs = [e.batch_ref for e in entries]
    batches: dict[str, Batch] = {}
    for latest in Batch.objects.filter(
        project=project, kind=Batch.Kind.MAIN, external_ref__in=refs
    ).order_by("number"):
        batches[latest.external_ref] = latest  # the latest batch of a session counts
    batch_ids = [b.id for b in batches.values()]
    submitted = dict(
        Assignment.objects.filter(batch_id__in=batch_ids, state=Assignment.State.SUBMITTED)
        .values("batch_id")
        .annotate(n=Count("id"))
        .values_list("batch_id", "n")
    )
    active = {
        r["assignment__batch_id"]: r
        for r in Annotation.objects.filter(assignment__batch_id__in=batch_ids)
        .values("assignment__batch_id")
        .annotate(ms=Sum("time_spent_ms"), reported=Sum("reported_time_ms"))
    }
    controls = _control_stats(project)
    members = {
        m.user_id: m
        for m in Membership.objects.filter(project=project).only(
            "user_id", "pseudonym", "qualification"
        )
    }
    rows: list[PaymentRow] = []
    for entry in entries:
        batch = batches.get(entry.batch_ref)
        member = members.get(entry.user_id)
        state = member.qualification if member else ""
        answered, right = controls.get(entry.user_id, (0, 0))
        passed = state != Qualification.DISQUALIFIED and (
            not crowd.qualification_required or state == Qualification.QUALIFIED
        )
        finished = batch is not None and batch.state == Batch.State.FINISHED
        reward, bonus = _amounts(
            crowd, finished=finished, passed=passed, stopped=state == Qualification.DISQUALIFIED
        )
        rows.append(
            {
                "platform": entry.platform,
                "worker_id": entry.worker_id,
                "study_id": entry.study_id,
                "session_id": entry.session_id,
                "hit_id": entry.hit_id,
                "annotator": member.pseudonym if member else "",
                "entered_at": entry.created_at.isoformat(),
                "batch_state": batch.state if batch else "not started",
                "completion_code": batch.code if finished and batch else "",
                "items_in_batch": batch.size if batch else 0,
                "items_submitted": submitted.get(batch.id, 0) if batch else 0,
                "finished_at": batch.finished_at.isoformat()
                if finished and batch and batch.finished_at
                else "",
                "active_minutes": _minutes(active, batch, "ms"),
                "reported_minutes": _minutes(active, batch, "reported"),
                "controls_answered": answered,
                "controls_right": right,
                "qualification": state,
                "passed_qc": passed,
                "currency": crowd.currency,
                "reward": f"{reward:.2f}",
                "bonus": f"{bonus:.2f}",
                "total": f"{reward + bonus:.2f}",
            }
        )
    return rows


def _amounts(crowd, *, finished: bool, passed: bool, stopped: bool) -> tuple[Decimal, Decimal]:
    """(reward, bonus) of one session: a finished batch earns the reward, plus the bonus when
    the worker passed quality control; a session stopped by quality control before finishing
    earns the screened-out reward."""
    if finished:
        return crowd.reward_per_batch, crowd.bonus_per_batch if passed else Decimal(0)
    if stopped:
        return crowd.screened_out_reward, Decimal(0)
    return Decimal(0), Decimal(0)


def prolific_bonus_rows(*, project: Project) -> list[ProlificBonusRow]:
    """Prolific's bulk-bonus lines (participant id, amount) for sessions with a bonus."""
    return [
        {"participant_id": row["worker_id"], "amount": row["bonus"]}
        for row in payment_rows(project=project)
        if row["platform"] == "prolific" and Decimal(row["bonus"]) > 0
    ]


def _minutes(active: dict, batch: Batch | None, key: str) -> float:
    """A batch's active time in minutes: ``ms`` as the server bounds it, ``reported`` as the
    worker's browser reported it (payments use the former; the latter shows who inflated it)."""
    if batch is None or batch.id not in active:
        return 0
    return round((active[batch.id][key] or 0) / 60000, 2)


def platform_actions(*, project: Project, limit: int = 500) -> list[CrowdAction]:
    """The project's platform actions (the ledger of ``crowd.actions``), latest first."""
    return list(CrowdAction.objects.filter(project=project).order_by("-updated_at", "-pk")[:limit])
