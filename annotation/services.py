"""The annotator workflow: reserve the next item, autosave drafts, submit answers.

Concurrency: ``assignment_next`` locks candidate item rows with ``SELECT … FOR UPDATE SKIP LOCKED``
on PostgreSQL, so concurrent annotators never both take the last free place on an item; the
``assigned_count`` counter only changes while its row is locked. SQLite ignores row locks but
serialises writers, which is enough for the embedded development database.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from annotation import task_types
from annotation.models import Annotation, Assignment, Draft, Item

MAX_DRAFT_BYTES = 64 * 1024


class WorkflowError(Exception):
    """A request the workflow refuses; ``code`` maps to an HTTP status in the API layer."""

    def __init__(self, message: str, *, code: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class AnswerInvalid(WorkflowError):
    def __init__(self, errors: dict) -> None:
        super().__init__("The answer is not complete or not valid.", code="invalid")
        self.errors = errors


def _reservation_window() -> timedelta:
    return timedelta(minutes=settings.CONCORD_RESERVATION_MINUTES)


def reservations_reclaim(*, project_id: int) -> int:
    """Expire reservations past their deadline and give their places back to the pool.

    Expired assignments stay (the annotator keeps their draft and may still submit while the
    item has room), but they no longer count toward the item's N annotators.
    """
    with transaction.atomic():
        return _reclaim(project_id)


def _reclaim(project_id: int) -> int:
    expired = list(
        Assignment.objects.select_for_update(skip_locked=True)
        .filter(project_id=project_id, state=Assignment.State.RESERVED, expires_at__lt=timezone.now())
        .values_list("id", "item_id")
    )
    if not expired:
        return 0
    Assignment.objects.filter(id__in=[a for a, _ in expired]).update(state=Assignment.State.EXPIRED)
    # Decrement relative to the current value (F), grouped by how many places each item gets
    # back, so the number of statements is bounded by N, not by the number of items.
    per_item = Counter(item_id for _, item_id in expired)
    by_amount: dict[int, list[int]] = {}
    for item_id, amount in per_item.items():
        by_amount.setdefault(amount, []).append(item_id)
    for amount, item_ids in by_amount.items():
        Item.objects.filter(id__in=item_ids).update(assigned_count=F("assigned_count") - amount)
    return len(expired)


def assignment_next(*, project, annotator) -> Assignment | None:
    """The annotator's open reservation in this project, or a newly reserved item, or None when
    there is nothing left for them. An item is offered only while it has fewer than
    ``project.annotators_per_item`` live assignments and never to someone who already had it.
    The returned assignment has ``item`` and ``project`` loaded."""
    now = timezone.now()
    open_assignment = (
        Assignment.objects.select_related("item", "project")
        .filter(
            project=project,
            annotator=annotator,
            state=Assignment.State.RESERVED,
            expires_at__gte=now,
        )
        .order_by("sequence")
        .first()
    )
    if open_assignment is not None:
        return open_assignment

    # Skip rows other requests hold; if that finds nothing although items with room remain (all
    # of them locked for an instant), wait for a lock instead of telling the annotator "done".
    for attempt, skip_locked in enumerate((True, False, False, False)):
        with transaction.atomic():
            if attempt == 0:
                _reclaim(project.id)
            item = _free_item_for_update(project, annotator, skip_locked=skip_locked)
            if item is not None:
                return _reserve(project, annotator, item, now)
        if not _free_item_exists(project, annotator):
            return None
    return None


def _free_items(project, annotator):
    seen = Assignment.objects.filter(project=project, annotator=annotator).values("item_id")
    return (
        Item.objects.filter(
            project=project,
            kind=Item.Kind.REGULAR,
            assigned_count__lt=project.annotators_per_item,
        )
        .exclude(id__in=seen)
        .order_by("position", "id")
    )


def _free_item_for_update(project, annotator, *, skip_locked: bool) -> Item | None:
    return (
        _free_items(project, annotator)
        .select_for_update(skip_locked=skip_locked)
        .first()
    )


def _free_item_exists(project, annotator) -> bool:
    return _free_items(project, annotator).exists()


def _reserve(project, annotator, item: Item, now) -> Assignment:
    """Create the assignment and take the place; the caller holds the item's row lock."""
    sequence = (
        Assignment.objects.filter(project=project, annotator=annotator).aggregate(last=Max("sequence"))[
            "last"
        ]
        or 0
    ) + 1
    assignment = Assignment.objects.create(
        project=project,
        item_id=item.id,
        annotator=annotator,
        reserved_at=now,
        expires_at=now + _reservation_window(),
        sequence=sequence,
    )
    Item.objects.filter(id=item.id).update(assigned_count=F("assigned_count") + 1)
    assignment.item = item
    assignment.project = project
    return assignment


def draft_save(*, assignment: Assignment, answer: dict, time_spent_ms: int, revision: int) -> Draft:
    """Autosave unfinished work. Partial answers are fine; only size is checked. A draft with a
    revision not newer than the stored one is ignored (late, out-of-order autosaves)."""
    if not isinstance(answer, dict):
        raise WorkflowError("A draft must be a JSON object.")
    if len(json.dumps(answer)) > MAX_DRAFT_BYTES:
        raise WorkflowError("The draft is too large.", code="too_large")
    with transaction.atomic():
        draft, created = Draft.objects.select_for_update().get_or_create(
            assignment=assignment,
            defaults={"answer": answer, "time_spent_ms": time_spent_ms, "revision": revision},
        )
        if not created and revision > draft.revision:
            draft.answer = answer
            draft.time_spent_ms = max(time_spent_ms, 0)
            draft.revision = revision
            draft.save(update_fields=["answer", "time_spent_ms", "revision", "updated_at"])
    return draft


def annotation_submit(
    *,
    assignment: Assignment,
    answer: dict,
    time_spent_ms: int = 0,
    submission_id: uuid.UUID | None = None,
) -> tuple[Annotation, bool]:
    """Validate and store an answer; returns (annotation, created).

    Idempotent: the same ``submission_id`` (a retried request) or an answer identical to the
    current one returns the stored annotation. A different answer on an already submitted
    assignment becomes a new version; earlier versions are kept.
    """
    item = assignment.item
    task_type = task_types.get(assignment.project.task_type)
    serializer = task_type.answer_serializer(data=answer, context={"item": item})
    if not serializer.is_valid():
        raise AnswerInvalid(serializer.errors)
    clean = serializer.validated_data
    submission_id = submission_id or uuid.uuid4()
    now = timezone.now()

    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        current = Annotation.objects.filter(assignment=locked, is_current=True).first()
        if current is not None and (current.submission_id == submission_id or current.answer == clean):
            return current, False
        if current is None:
            retried = Annotation.objects.filter(assignment=locked, submission_id=submission_id).first()
            if retried is not None:
                return retried, False

        if locked.state == Assignment.State.EXPIRED:
            _reactivate_expired(locked)

        version = 1
        if current is not None:
            version = current.version + 1
            Annotation.objects.filter(pk=current.pk).update(is_current=False)
        try:
            annotation = Annotation.objects.create(
                assignment=locked,
                item_id=locked.item_id,
                annotator_id=locked.annotator_id,
                answer=clean,
                version=version,
                is_current=True,
                submission_id=submission_id,
                time_spent_ms=max(int(time_spent_ms), 0),
            )
        except IntegrityError:  # pragma: no cover - guarded by the row lock above
            raise WorkflowError("This answer was already recorded.", code="conflict") from None
        if locked.state != Assignment.State.SUBMITTED:
            Assignment.objects.filter(pk=locked.pk).update(
                state=Assignment.State.SUBMITTED, submitted_at=now
            )
        Draft.objects.filter(assignment=locked).delete()
    assignment.state = Assignment.State.SUBMITTED
    return annotation, True


def _reactivate_expired(assignment: Assignment) -> None:
    """Let a late annotator submit on an expired reservation if the item still has room; otherwise
    refuse clearly (their draft stays on the server)."""
    item = Item.objects.select_for_update().get(pk=assignment.item_id)
    if item.assigned_count >= assignment.project.annotators_per_item:
        raise WorkflowError(
            "Your reservation of this item expired and it has since been given to other annotators. "
            "Your draft is kept.",
            code="conflict",
        )
    Item.objects.filter(pk=item.pk).update(assigned_count=F("assigned_count") + 1)


def validation_errors_text(errors: dict | list) -> str:
    """Flatten DRF errors for a message line."""
    field, message = task_types.base.first_error(errors)
    return f"{field}: {message}" if field else message


__all__ = [
    "AnswerInvalid",
    "WorkflowError",
    "annotation_submit",
    "assignment_next",
    "draft_save",
    "reservations_reclaim",
]
