"""Reads for the annotator workflow. Nothing here returns gold or another annotator's work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.http import Http404
from django.utils.translation import gettext_lazy

from annotation import quality, task_types
from annotation.hooks import reachable
from annotation.models import (
    Annotation,
    AnnotatorAnswerCounts,
    Assignment,
    Batch,
    Draft,
    ExternalAnswerCounts,
    Item,
    ItemFlag,
    ProjectAnswerCounts,
    ProjectItemCounts,
    SendBack,
)
from annotation.references import item_reference
from projects.crowd import CrowdSettings, crowd_settings, flag_reason_label
from projects.models import Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotation.task_types import TaskType


class DraftView(TypedDict):
    answer: Any
    time_spent_ms: int
    revision: int


class AnswerView(TypedDict):
    answer: Any
    version: int
    time_spent_ms: int


class BatchView(TypedDict):
    kind: str
    number: int
    position: int  # 1-based, within the batch
    size: int
    state: str


class SentBackView(TypedDict):
    note: str
    version: int
    sent_at: str  # ISO 8601


class FlagAnswer(TypedDict):
    reason: str
    reason_label: (
        str  # a default reason in the annotator's language; the researchers' own as written
    )
    response: str


class OwnFlag(TypedDict):
    """One of the annotator's own flags on the item of this assignment (skips left out: a
    skipped item does not come back), so the page shows it is flagged after a reload."""

    reason: str
    reason_label: str
    state: str  # "open" or "resolved"


class AssignmentView(TypedDict):
    """What the annotation page (and the API) shows for one assignment."""

    id: int
    sequence: int
    reference: str
    state: str
    expires_at: str  # ISO 8601
    submitted_revision: int
    task_type: str
    item: dict[str, Any]  # the task type's display of the item (never gold)
    draft: DraftView | None
    answer: AnswerView | None
    batch: BatchView | None
    sent_back: SentBackView | None
    may_skip: bool
    flag_reasons: list[str]
    flag_answers: list[FlagAnswer]
    flags: list[OwnFlag]


def own_assignment(*, user: User, assignment_id: int) -> Assignment:
    """The user's own assignment with its item and project; 404 for anyone else's, and for a
    crowd worker's assignment outside their current platform session (``annotation.hooks``)."""
    assignment = reachable(
        Assignment.objects.select_related("item", "project", "batch").filter(
            pk=assignment_id, annotator=user
        ),
        user=user,
    ).first()
    if assignment is None:
        raise Http404("No such assignment.")
    return assignment


def assignment_view(*, assignment: Assignment, dealt_now: bool = False) -> AssignmentView:
    """Everything the annotation page needs for one assignment, from a fixed number of queries:
    the item as the task type displays it (no gold), the saved draft and the current answer.
    ``dealt_now``: the caller's own request reserved it a moment ago (``Assignment.dealt_now``)
    and wrote nothing on it since, so there is no draft, answer or flag to read (every next
    of every annotator saves those reads).

    Control items must be indistinguishable from regular ones: nothing here depends on the item's
    kind, and the batch block (null outside batches) is the same for every item of a batch."""
    task_type = task_types.get(assignment.project.task_type)
    if dealt_now:
        return _assignment_view(assignment, task_type, draft=None, current=None, raised=[])
    draft = Draft.objects.filter(assignment=assignment).first()
    current = Annotation.objects.filter(assignment=assignment, is_current=True).first()
    raised = list(
        ItemFlag.objects.filter(assignment=assignment)
        .order_by("id")
        .values_list("reason", "response", "state", "skipped")
    )
    return _assignment_view(assignment, task_type, draft=draft, current=current, raised=raised)


def _assignment_view(
    assignment: Assignment,
    task_type: TaskType,
    *,
    draft: Draft | None,
    current: Annotation | None,
    raised: list[tuple[str, str, str, bool]],
) -> AssignmentView:
    item: Item = assignment.item
    project = assignment.project
    returned = (
        SendBack.objects.filter(assignment=assignment, answered_at__isnull=True)
        .values("note", "version", "created_at")
        .first()
        if current is not None
        else None
    )
    crowd = crowd_settings(project)
    answered = [
        FlagAnswer(reason=reason, reason_label=flag_reason_label(reason), response=response)
        for reason, response, _, _ in raised
        if response
    ]
    return {
        "id": assignment.id,
        "sequence": assignment.sequence,
        "reference": item_reference(item_id=item.id),
        "state": assignment.state,
        "expires_at": assignment.expires_at.isoformat(),
        "submitted_revision": assignment.submitted_revision,
        "task_type": project.task_type,
        "item": task_type.display(item, assignment=assignment),
        "draft": None
        if draft is None
        else {
            "answer": draft.answer,
            "time_spent_ms": draft.time_spent_ms,
            "revision": draft.revision,
        },
        "answer": None
        if current is None
        else {
            "answer": current.answer,
            "version": current.version,
            "time_spent_ms": current.time_spent_ms,
        },
        "batch": _batch_view(assignment),
        "sent_back": None
        if returned is None
        else {
            "note": returned["note"],
            "version": returned["version"],
            "sent_at": returned["created_at"].isoformat(),
        },
        # Only work not yet submitted can be skipped (a sent-back answer was submitted).
        "may_skip": crowd.allow_skip
        and assignment.batch_id is None
        and assignment.state in (Assignment.State.RESERVED, Assignment.State.EXPIRED),
        "flag_reasons": list(crowd.flag_reasons),
        # The researchers' answers to the annotator's own flags on this item.
        "flag_answers": answered,
        # The annotator's own flags on it: the page says the item is flagged after a reload.
        "flags": [
            OwnFlag(reason=reason, reason_label=flag_reason_label(reason), state=state)
            for reason, _, state, skipped in raised
            if not skipped
        ],
    }


def _batch_view(assignment: Assignment) -> BatchView | None:
    batch = assignment.batch  # select_related by the callers (no query without a batch)
    if batch is None:
        return None
    return {
        "kind": batch.kind,
        "number": batch.number,
        "position": assignment.sequence - batch.first_sequence + 1,
        "size": batch.size,
        "state": batch.state,
    }


def annotator_history(*, project: Project, user: User) -> QuerySet[Assignment]:
    """The user's assignments in the project, newest first (a crowd worker's: of their current
    platform session only)."""
    return (
        reachable(Assignment.objects.filter(project=project, annotator=user), user=user)
        .annotate(has_draft=Exists(Draft.objects.filter(assignment=OuterRef("pk"))))
        .select_related("item")
        .order_by("-sequence")
        .only("id", "sequence", "state", "reserved_at", "submitted_at", "item__payload")
    )


class AnnotatorCounts(TypedDict):
    submitted: int
    total: int  # the annotator's assignments
    items: int  # the project's regular items


def annotator_counts(*, project: Project, user: User) -> AnnotatorCounts:
    """Item k of n: k is the next sequence number, n the number of regular items in the project.
    Two queries whatever the project's size: the annotator's own assignments (their index) and
    the project's maintained item counter (``ProjectItemCounts``), never a COUNT over its items."""
    stats = Assignment.objects.filter(project=project, annotator=user).aggregate(
        submitted=Count("id", filter=Q(state=Assignment.State.SUBMITTED)),
        total=Count("id"),
    )
    items = (
        ProjectItemCounts.objects.filter(project_id=project.id)
        .values_list("regular_items", flat=True)
        .first()
        or 0
    )
    return AnnotatorCounts(submitted=stats["submitted"], total=stats["total"], items=items)


COUNTERS = ("items", "regular_items", "items_revision")
ANSWER_COUNTERS = ("submitted", "complete_items", "annotations", "annotations_revision")


class ProjectCounts(TypedDict):
    items: int
    regular_items: int
    items_revision: int
    submitted: int
    complete_items: int
    annotations: int
    annotations_revision: int


def item_groups(*, project: Project) -> list[str]:
    """The project's item groups (not empty), sorted. A skip scan of ``item_group_order_idx``
    (project, group, …): one index probe per group, each for the least group above the last
    one, so the cost follows the number of groups, not of items (``SELECT DISTINCT`` read every
    item: 0.13 s at 100k)."""
    table = connection.ops.quote_name(Item._meta.db_table)
    group = connection.ops.quote_name("group")
    sql = f"""
        WITH RECURSIVE found(name) AS (
            SELECT MIN({group}) FROM {table} WHERE project_id = %s AND {group} > ''
            UNION ALL
            SELECT (SELECT MIN(i.{group}) FROM {table} i
                    WHERE i.project_id = %s AND i.{group} > found.name)
            FROM found WHERE found.name IS NOT NULL
        )
        SELECT name FROM found WHERE name IS NOT NULL
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk, project.pk])
        return [name for (name,) in cursor.fetchall()]


def project_counts(*, project: Project) -> ProjectCounts:
    """The project's maintained counters (kept by database triggers): ``items``,
    ``regular_items``, ``items_revision``, ``submitted`` (assignments), ``complete_items``,
    ``annotations`` (answer versions) and ``annotations_revision``. One query; zeros for a project
    without counter rows."""
    answers = ProjectAnswerCounts.objects.filter(project_id=project.id)
    row = (
        ProjectItemCounts.objects.filter(project_id=project.id)
        .annotate(**{name: Subquery(answers.values(name)[:1]) for name in ANSWER_COUNTERS})
        .values(*COUNTERS, *ANSWER_COUNTERS)
        .first()
    )
    if row is None:
        return cast(ProjectCounts, dict.fromkeys(COUNTERS + ANSWER_COUNTERS, 0))
    return cast(ProjectCounts, {key: value or 0 for key, value in row.items()})


def external_answers_version(*, project: Project) -> tuple[int, int]:
    """The project's external coders' answers and their revision (moves with every insert,
    change or delete of one), from the counter row database triggers keep
    (:mod:`annotation.counter_triggers.external_answers`): one query, never a count."""
    row = (
        ExternalAnswerCounts.objects.filter(project_id=project.id)
        .values_list("answers", "revision")
        .first()
    )
    return (0, 0) if row is None else (row[0], row[1])


STOP_MESSAGES = {
    "disqualified": (
        gettext_lazy("Thank you for your work"),
        gettext_lazy(
            "Your recent answers did not meet the quality this study needs, so we cannot offer you "
            "more items. Everything you submitted has been recorded."
        ),
    ),
    "closed_by_researcher": (
        gettext_lazy("Thank you for your work"),
        gettext_lazy(
            "The researchers have closed this study for you. Everything you submitted has been "
            "recorded."
        ),
    ),
    "qualification_failed": (
        gettext_lazy("Thank you for taking the qualification round"),
        gettext_lazy(
            "Your answers did not reach the score this study needs, so we cannot offer you the main "
            "items. We appreciate the time you gave."
        ),
    ),
    "qualification_pending": (
        gettext_lazy("Your qualification is being reviewed"),
        gettext_lazy(
            "There is no qualification round open for you right now. The researchers will review "
            "your work; please check back later."
        ),
    ),
    "batch_complete": (
        gettext_lazy("Batch complete – thank you!"),
        gettext_lazy("You finished this batch. Your completion code is below."),
    ),
    "quota_reached": (
        gettext_lazy("You have done your share – thank you!"),
        gettext_lazy(
            "You have annotated as many items as this study asks of each annotator. Everything you "
            "submitted is kept, and you can still reopen your previous items."
        ),
    ),
    "project_closed": (
        gettext_lazy("This project is not open right now"),
        gettext_lazy(
            "The researchers have paused or closed this project, so no new items are handed out. "
            "Everything you submitted is kept, and you can still reopen your previous items."
        ),
    ),
}


def quota_reached(*, project: Project, annotator: User, crowd: CrowdSettings) -> bool:
    """Whether the annotator holds or has done the project's ``max_items_per_annotator``
    regular items (reservations that expired do not count); at most that many rows read."""
    limit = crowd.max_items_per_annotator
    if not limit:
        return False
    had = Assignment.objects.filter(
        project=project,
        annotator=annotator,
        item__kind=Item.Kind.REGULAR,
        state__in=(Assignment.State.RESERVED, Assignment.State.SUBMITTED),
    )
    return had[:limit].count() >= limit


class BatchDone(TypedDict, total=False):
    code: str
    batch: int
    size: int
    can_start_another: bool


class AnnotatorStop(TypedDict):
    """Why an annotator gets no item; a finished batch adds its code, number, size and whether
    another batch can be started."""

    reason: str
    title: str
    message: str
    feedback: str
    screened_out: NotRequired[bool]
    code: NotRequired[str]
    batch: NotRequired[int]
    size: NotRequired[int]
    can_start_another: NotRequired[bool]


def annotator_stop(*, project: Project, user: User, batch_ref: str = "") -> AnnotatorStop | None:
    """Why ``assignment_next`` gave this annotator nothing, as a polite message for their page, or
    None when there is simply no item left. Includes the researcher's feedback, and for a
    finished batch its completion code."""
    membership = Membership.objects.current().filter(project=project, user=user).first()
    if membership is None:
        return None
    crowd = crowd_settings(project)
    reason = None
    extra: BatchDone = {}
    if project.status != project.Status.ACTIVE:
        title, message = STOP_MESSAGES["project_closed"]
        return {
            "reason": "project_closed",
            "title": str(title),
            "message": str(message),
            "feedback": "",
        }
    Reason = Membership.QualificationReason
    if membership.qualification == Membership.Qualification.DISQUALIFIED:
        reason = {
            Reason.QUALIFICATION_FAILED: "qualification_failed",
            Reason.RESEARCHER: "closed_by_researcher",
        }.get(membership.qualification_reason, "disqualified")
    elif quality.needs_qualification(crowd, membership):
        reason = "qualification_pending"
    elif crowd.batches:
        finished = Batch.objects.filter(
            project=project, annotator=user, kind=Batch.Kind.MAIN, state=Batch.State.FINISHED
        )
        if batch_ref:
            finished = finished.filter(external_ref=batch_ref)
        batch = finished.order_by("-number").first()
        if batch is not None:
            reason = "batch_complete"
            more = not batch_ref and _regular_items_left(project, user)
            extra = {
                "code": batch.code,
                "batch": batch.number,
                "size": batch.size,
                "can_start_another": more,
            }
    elif quota_reached(project=project, annotator=user, crowd=crowd):
        reason = "quota_reached"
    if reason is None:
        return None
    title, message = STOP_MESSAGES[reason]
    return {
        "reason": reason,
        "title": str(title),
        "message": str(message),
        "feedback": membership.feedback,
        # Stopped for good: a crowd worker is shown the platform's way back (screen-out / return).
        "screened_out": membership.qualification == Membership.Qualification.DISQUALIFIED,
        **extra,
    }


def _regular_items_left(project, user) -> bool:
    """Whether the open queue (items not full) holds one the user has not had."""
    return (
        Item.objects.filter(project=project, kind=Item.Kind.REGULAR, is_full=False)
        .filter(~Exists(Assignment.objects.filter(item=OuterRef("pk"), annotator=user)))
        .exists()
    )


class AnnotatorProgress(TypedDict):
    username: str
    pseudonym: str
    submitted: int
    reserved: int


class ProjectProgress(TypedDict):
    items: int
    regular_items: int
    complete_items: int
    answers_needed: int
    answers_submitted: int
    percent: float
    annotators: list[AnnotatorProgress]
    versions: int  # answer versions


def project_progress(*, project: Project) -> ProjectProgress:
    """Items, places needed, answers given, and per-annotator counts; four queries whatever the
    project's size. Totals, complete items and each annotator's submitted count come from the
    maintained counters (``project_counts``, ``AnnotatorAnswerCounts``); reserved counts from
    the project's open reservations (few, read through the expiry index)."""
    counts = project_counts(project=project)
    needed = counts["regular_items"] * project.annotators_per_item
    submitted = counts["submitted"]
    members = list(
        Membership.objects.filter(project=project, role=Membership.Role.ANNOTATOR)
        .select_related("user")
        .order_by("user__username")
    )
    per_annotator = dict(
        AnnotatorAnswerCounts.objects.filter(project=project).values_list(
            "annotator_id", "submitted"
        )
    )
    reserved = dict(
        Assignment.objects.filter(project=project, state=Assignment.State.RESERVED)
        .values("annotator_id")
        .annotate(n=Count("id"))
        .values_list("annotator_id", "n")
    )
    return {
        "items": counts["items"],
        "regular_items": counts["regular_items"],
        "complete_items": counts["complete_items"],
        "answers_needed": needed,
        "answers_submitted": submitted,
        "percent": round(100 * submitted / needed, 1) if needed else 0.0,
        "annotators": [
            {
                "username": m.user.username,
                "pseudonym": m.pseudonym,
                "submitted": per_annotator.get(m.user_id, 0),
                "reserved": reserved.get(m.user_id, 0),
            }
            for m in members
        ],
        "versions": counts["annotations"],
    }
