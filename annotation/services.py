"""The annotator workflow: reserve the next item, autosave drafts, submit answers.

Concurrency: ``assignment_next`` locks candidate item rows with ``SELECT … FOR UPDATE SKIP LOCKED``
on PostgreSQL, so concurrent annotators never both take the last free place on an item; the
``assigned_count`` counter only changes while its row is locked. SQLite ignores row locks but
serialises writers, which is enough for the embedded development database. Batch starts lock the
project row instead, FOR NO KEY UPDATE so that submits' foreign-key checks pass (see
``_start_batch``).

Quality control (control items, accuracy, qualification rounds) lives in ``annotation.quality``;
the crowd settings it follows in ``projects.crowd``.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, models, transaction
from django.db.models import Count, Exists, F, Max, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext

from annotation import hooks, ordering, quality, task_types
from annotation.counter_triggers import external_answers
from annotation.models import (
    Annotation,
    AnnotatorAnswerCounts,
    Assignment,
    Batch,
    Draft,
    Item,
    ProjectAnswerCounts,
    ProjectItemCounts,
    SendBack,
)
from annotation.selectors import quota_reached
from core.errors import Refusal, first_error
from projects.crowd import CrowdSettings, crowd_settings
from projects.models import Membership, Project
from webhooks import events as webhook_events
from webhooks.services import Event, events_emit

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MAX_DRAFT_BYTES = 64 * 1024
log = logging.getLogger(__name__)


class WorkflowError(Refusal):
    """A request the annotator workflow refuses (``core.errors`` maps its code to HTTP)."""


class AnswerInvalid(WorkflowError):
    def __init__(self, errors: dict) -> None:
        field, _ = first_error(errors)
        super().__init__(
            gettext("The answer is not complete or not valid."),
            code="invalid",
            field=field,
            errors=errors,
        )


def _reservation_window() -> timedelta:
    return timedelta(minutes=settings.CONCORD_RESERVATION_MINUTES)


def reservations_reclaim(*, project_id: int) -> int:
    """Expire reservations past their deadline and give their places back to the pool; batches
    left behind become abandoned.

    Expired assignments stay (the annotator keeps their draft and may still submit while the
    item has room), but they no longer count toward the item's N annotators.
    """
    with transaction.atomic():
        return _reclaim(project_id, batches=True)


def _reclaim(project_id: int, *, batches: bool) -> int:
    now = timezone.now()
    count = quality.expire_open_work(project_id=project_id, now=now)
    if batches:
        quality.abandon_expired_batches(project_id=project_id, now=now)
    return count


# A deadlock PostgreSQL broke by rolling back one transaction (many annotators starting batches
# at one instant on a loaded machine): that request's dealing starts again, up to this many times.
DEADLOCK_ATTEMPTS = 3
DEADLOCK_DETECTED = "40P01"  # PostgreSQL's SQLSTATE


def assignment_next(
    *,
    project: Project,
    annotator: User,
    batch_ref: str = "",
    start_batch: bool = False,
    membership: Membership | None = None,
) -> Assignment | None:
    """:func:`_assignment_next`, started again when PostgreSQL broke a deadlock by rolling back
    this request's transaction (only outside an enclosing transaction, which the rollback ends).
    ``membership``: the annotator's current membership of ``project`` as the caller just read it
    (the API's permission check did), else it is read here when needed."""
    for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
        try:
            return _assignment_next(
                project=project,
                annotator=annotator,
                batch_ref=batch_ref,
                start_batch=start_batch,
                membership=membership,
            )
        except OperationalError as exc:
            deadlock = getattr(exc.__cause__, "pgcode", None) == DEADLOCK_DETECTED
            if not deadlock or connection.in_atomic_block or attempt == DEADLOCK_ATTEMPTS:
                raise
            log.warning(
                "Dealing in project %s deadlocked (attempt %s of %s); dealing again.",
                project.pk,
                attempt,
                DEADLOCK_ATTEMPTS,
            )
    raise AssertionError("unreachable")  # pragma: no cover


def _assignment_next(
    *,
    project: Project,
    annotator: User,
    batch_ref: str,
    start_batch: bool,
    membership: Membership | None,
) -> Assignment | None:
    """The annotator's open reservation in this project, or a newly reserved item, or None when
    there is nothing for them (``selectors.annotator_stop`` says why). An item is offered only
    while it has fewer than ``project.annotators_per_item`` live assignments and never to someone
    who already had it. The returned assignment has ``item`` and ``project`` loaded.

    With the project's crowd settings (``projects.crowd``): disqualified members get nothing;
    members who must qualify get a qualification round first; with batches, a whole batch is
    reserved at once and the next one starts only with ``start_batch`` (after the completion code
    was shown) or, for a crowd-platform session, once per ``batch_ref``; without batches,
    controls are mixed in at ``control_rate``.

    An answer a reviewer sent back (``annotation.flags.send_back``) comes first of all."""
    now = timezone.now()
    # Read from the open send-backs (the partial unique index of sendback_one_open: few rows in
    # all), not from the annotator's assignments, so the cost does not grow with their work.
    returned = (
        SendBack.objects.filter(
            answered_at__isnull=True,
            assignment__project=project,
            assignment__annotator=annotator,
        )
        .select_related("assignment__item", "assignment__project", "assignment__batch")
        .order_by("created_at", "id")
        .first()
    )
    if returned is not None:
        assignment_reopen(assignment=returned.assignment)
        return returned.assignment
    open_assignment = (
        Assignment.objects.select_related("item", "project", "batch")
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
    if project.status != project.Status.ACTIVE:
        return None  # paused, archived or draft: open reservations can be finished, nothing new

    crowd = crowd_settings(project)
    if membership is None:
        membership = Membership.objects.current().filter(project=project, user=annotator).first()
    if membership is None or membership.qualification == Membership.Qualification.DISQUALIFIED:
        return None
    seed = membership.order_seed
    if quality.needs_qualification(crowd, membership):
        return _start_batch(
            project, annotator, crowd, now, kind=Batch.Kind.QUALIFICATION, seed=seed
        )
    if crowd.batches:
        return _start_batch(
            project,
            annotator,
            crowd,
            now,
            kind=Batch.Kind.MAIN,
            ref=batch_ref,
            force=start_batch,
            seed=seed,
        )
    return _next_single(project, annotator, crowd, now, seed=seed)


def _next_single(project, annotator, crowd: CrowdSettings, now, *, seed: int) -> Assignment | None:
    # Skip rows other requests hold; if that finds nothing although items with room remain (all
    # of them locked for an instant), wait for a lock instead of telling the annotator "done".
    for attempt, skip_locked in enumerate((True, False, False, False)):
        with transaction.atomic():
            if attempt == 0:
                # One annotator's requests (two tabs) take turns: the second sees the reservation
                # the first made instead of opening another with the same sequence number.
                Membership.objects.select_for_update().filter(
                    project=project, user=annotator
                ).values_list("pk").first()
                opened = (
                    Assignment.objects.select_related("item", "project", "batch")
                    .filter(project=project, annotator=annotator, state=Assignment.State.RESERVED)
                    .filter(expires_at__gte=now)
                    .order_by("sequence")
                    .first()
                )
                if opened is not None:
                    return opened
                if quota_reached(project=project, annotator=annotator, crowd=crowd):
                    return None  # under the membership lock: two tabs cannot pass it together
                _reclaim(project.id, batches=crowd.qualification_required)
            sequence = _next_sequence(project, annotator)
            if crowd.control_rate and _control_turn(
                project, annotator, sequence, crowd.control_rate
            ):
                control = _unseen(project, annotator, Item.Kind.CONTROL).order_by("?").first()
                if control is not None:
                    return _reserve(project, annotator, control, now, sequence=sequence, seed=seed)
            taken = _take_free(
                project, annotator, crowd, seed=seed, count=1, skip_locked=skip_locked
            )
            if taken:
                return _reserve(project, annotator, taken[0], now, sequence=sequence, seed=seed)
        if not _open_items(project, annotator).exists():
            return None
    return None


def _control_turn(project, annotator, sequence: int, rate: float) -> bool:
    """Whether the annotator's ``sequence``-th item is a control: a draw seeded per project,
    annotator and position, so the pattern is stable across retries yet differs between people
    (no "every fourth item" rhythm to learn)."""
    secret = f"{settings.SECRET_KEY}:{project.id}:{annotator.id}:{sequence}"
    return random.Random(secret).random() < rate


def _unseen(project, annotator, kind: str):
    seen = Assignment.objects.filter(project=project, annotator=annotator).values("item_id")
    return Item.objects.filter(project=project, kind=kind).exclude(id__in=seen)


def _open_items(project, annotator):
    """Regular items with room that the annotator has not had, in no order.

    Reads the open queue only (``is_full = false``: the partial indexes ``item_open_queue_idx``,
    ``item_open_least_idx`` and ``item_open_shuffle_idx``, whose orders are the queue's), and
    drops the items the annotator already had with a NOT EXISTS probe per candidate (the unique
    (item, annotator) index), so the cost does not grow with the project's full items nor with its
    assignments, and "nothing left" is an empty index range."""
    return Item.objects.filter(project=project, kind=Item.Kind.REGULAR, is_full=False).filter(
        ~Exists(Assignment.objects.filter(item=OuterRef("pk"), annotator=annotator))
    )


def _free_items(project, annotator, crowd: CrowdSettings, *, seed: int) -> list:
    """The open items in the annotator's order (``annotation.ordering``), as querysets to read
    one after the other: one for the import order and the least annotated first; for the random
    order, the walk from the annotator's starting point and then the part it wraps round to."""
    items = _open_items(project, annotator)
    if crowd.assignment_strategy == "least_annotated":
        return [items.order_by("assigned_count", "position", "id")]
    if crowd.assignment_strategy == "active":  # one weighted random order for everyone
        return [items.order_by("-sampling_priority", "id")]
    if crowd.assignment_strategy == "random":
        origin = ordering.start(seed)
        if ordering.descending(seed):
            down = ("-shuffle_key", "-id")
            return [
                items.filter(shuffle_key__lte=origin).order_by(*down),
                items.filter(shuffle_key__gt=origin).order_by(*down),
            ]
        up = ("shuffle_key", "id")
        return [
            items.filter(shuffle_key__gte=origin).order_by(*up),
            items.filter(shuffle_key__lt=origin).order_by(*up),
        ]
    return [items.order_by("position", "id")]


def _take_free(
    project, annotator, crowd: CrowdSettings, *, seed: int, count: int, skip_locked: bool = False
) -> list[Item]:
    """Up to ``count`` open items in the annotator's order, locked (``FOR UPDATE``, skipping
    rows other requests hold when ``skip_locked``); the wrapped part of a random walk is read only
    when the first part has too few."""
    taken: list[Item] = []
    for part in _free_items(project, annotator, crowd, seed=seed):
        taken += part.select_for_update(skip_locked=skip_locked)[: count - len(taken)]
        if len(taken) >= count:
            break
    return taken


def _next_sequence(project, annotator) -> int:
    last = Assignment.objects.filter(project=project, annotator=annotator).aggregate(
        last=Max("sequence")
    )["last"]
    return (last or 0) + 1


def _presentation(project, item: Item, *, seed: int, sequence: int) -> dict:
    """How the task type lays ``item`` out for the annotator's ``sequence``-th assignment (its
    counterbalanced side, ``annotation.ordering.flipped``)."""
    task = task_types.get(project.task_type)
    return task.presentation(
        item, config=project.config or {}, flipped=ordering.flipped(seed, sequence)
    )


def _reserve(project, annotator, item: Item, now, *, sequence: int, seed: int) -> Assignment:
    """Create the assignment and take the place; the caller holds the item's row lock."""
    assignment = Assignment.objects.create(
        project=project,
        item_id=item.id,
        annotator=annotator,
        reserved_at=now,
        expires_at=now + _reservation_window(),
        sequence=sequence,
        presentation=_presentation(project, item, seed=seed, sequence=sequence),
    )
    # The same statement for every kind (it matches no row for a control), so dealing a control
    # costs the server exactly what dealing a regular item does.
    Item.objects.filter(id=item.id, kind=Item.Kind.REGULAR).update(
        assigned_count=F("assigned_count") + 1
    )
    assignment.item = item
    assignment.project = project
    assignment.dealt_now = True
    return assignment


def _open_batch_assignment(project, annotator) -> Assignment | None:
    """The first reserved assignment of the annotator's open batch, if one is open."""
    return (
        Assignment.objects.select_related("item", "project", "batch")
        .filter(
            project=project,
            annotator=annotator,
            state=Assignment.State.RESERVED,
            batch__state=Batch.State.OPEN,
        )
        .order_by("sequence")
        .first()
    )


def _main_batch_items(
    project, annotator, crowd: CrowdSettings, *, ref: str, force: bool, seed: int
) -> tuple[list[Item], list[Item]]:
    """(regular, chosen) for a main batch: up to ``batch_size`` free regular items (locked) and
    the controls, shuffled together; nothing when the annotator is not due a batch."""
    done = Batch.objects.filter(
        project=project, annotator=annotator, kind=Batch.Kind.MAIN, state=Batch.State.FINISHED
    )
    if ref:
        done = done.filter(external_ref=ref)
    if (ref or not force) and done.exists():
        return [], []
    regular = _take_free(project, annotator, crowd, seed=seed, count=crowd.batch_size)
    if not regular:
        return [], []
    controls = _batch_controls(project, annotator, crowd) if crowd.controls_per_batch else []
    chosen = regular + controls
    random.SystemRandom().shuffle(chosen)  # where the controls sit must not be guessable
    return regular, chosen


def _batch_controls(project, annotator, crowd: CrowdSettings) -> list[Item]:
    """The control items of a new batch, not seen before by the annotator: with the task type's
    quota (e.g. 2 positive + 1 negative), that many of each category, fewer only when the
    annotator has seen the rest; otherwise ``controls_per_batch`` drawn at random."""
    pool = _unseen(project, annotator, Item.Kind.CONTROL)
    task = task_types.get(project.task_type)
    quota = task.control_quota(project.config or {})
    if not quota:
        return list(pool.order_by("?")[: crowd.controls_per_batch])
    candidates = list(pool.only("id", "gold"))  # control pools are small: categorise in Python
    random.SystemRandom().shuffle(candidates)
    chosen: list[Item] = []
    for category, count in quota.items():
        chosen += [c for c in candidates if task.control_category(c.gold) == category][:count]
    return chosen


def _qualification_items(project, annotator, crowd: CrowdSettings) -> list[Item]:
    pool = _unseen(project, annotator, Item.Kind.QUALIFICATION).order_by("position", "id")
    return list(pool[: crowd.qualification_size] if crowd.qualification_size else pool)


def _create_batch(
    project,
    annotator,
    crowd: CrowdSettings,
    now,
    *,
    kind: str,
    ref: str,
    chosen: list[Item],
    seed: int,
) -> tuple[Batch, list[Assignment]]:
    """The batch row and one reserved assignment per chosen item, in the chosen order."""
    number = (
        Batch.objects.filter(project=project, annotator=annotator, kind=kind).aggregate(
            last=Max("number")
        )["last"]
        or 0
    ) + 1
    expires_at = now + timedelta(minutes=crowd.batch_minutes)
    first_sequence = _next_sequence(project, annotator)
    batch = Batch.objects.create(
        project=project,
        annotator=annotator,
        kind=kind,
        number=number,
        size=len(chosen),
        external_ref=ref,
        first_sequence=first_sequence,
        created_at=now,
        expires_at=expires_at,
    )
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                project=project,
                item_id=item.id,
                annotator=annotator,
                reserved_at=now,
                expires_at=expires_at,
                sequence=first_sequence + offset,
                batch=batch,
                presentation=_presentation(
                    project, item, seed=seed, sequence=first_sequence + offset
                ),
            )
            for offset, item in enumerate(chosen)
        ]
    )
    return batch, assignments


def _start_batch(
    project,
    annotator,
    crowd: CrowdSettings,
    now,
    *,
    kind: str,
    seed: int,
    ref: str = "",
    force: bool = False,
) -> Assignment | None:
    """Reserve a whole batch and return its first assignment, or None when the annotator is not
    due one (their batch for ``ref`` is finished; without ``ref`` and ``force``, a finished batch
    waits for the annotator to ask for the next) or nothing is left.

    Batch starts in a project are serialised by a lock on the project row: each sees the places
    the previous one took (batches are full and never exceed N annotators per item), two starts
    cannot deadlock on item rows (the least-annotated order changes as places are taken), and an
    annotator's second request that raced the first (another tab) gets the batch the first one
    opened instead of a second open batch.

    The lock is FOR NO KEY UPDATE, never FOR UPDATE (issue 33): a submit holds its item's row
    (``submitted_count``) and, at COMMIT, checks the deferred foreign key of the annotator's
    first counter row (``annotatoranswercounts`` → project: FOR KEY SHARE on the project row).
    FOR UPDATE blocks that check, so a start holding the project row and waiting for that item's
    row deadlocked with the submit; FOR NO KEY UPDATE still excludes other starts but lets
    foreign-key checks through, so a submit never waits for a start."""
    with transaction.atomic():
        Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list(
            "pk"
        ).first()
        _reclaim(project.id, batches=True)
        current = _open_batch_assignment(project, annotator)
        if current is not None:
            return current
        if kind == Batch.Kind.MAIN:
            regular, chosen = _main_batch_items(
                project, annotator, crowd, ref=ref, force=force, seed=seed
            )
        else:
            regular, chosen = [], _qualification_items(project, annotator, crowd)
        if not chosen:
            return None
        batch, assignments = _create_batch(
            project, annotator, crowd, now, kind=kind, ref=ref, chosen=chosen, seed=seed
        )
        if regular:
            Item.objects.filter(id__in=[i.id for i in regular]).update(
                assigned_count=F("assigned_count") + 1
            )
    first = assignments[0]
    first.item = chosen[0]
    first.project = project
    first.batch = batch
    return first


def _may_write_or_landed(
    assignment: Assignment, submission_id: uuid.UUID | None, answer: dict
) -> Annotation | None:
    """None when the annotator may write; else the answer stored for this very request
    (:func:`_landed_retry`), or the refusal."""
    try:
        _check_may_write(assignment)
    except WorkflowError:
        landed = _landed_retry(assignment, submission_id, answer)
        if landed is None:
            raise
        return landed
    return None


def _landed_retry(
    assignment: Assignment, submission_id: uuid.UUID | None, answer: dict
) -> Annotation | None:
    """The answer stored for a retried request (same ``submission_id``, same answer), for one who
    may no longer write: an annotator made a reviewer, or disqualified, after their submit landed
    learns that it did (200, what is stored now), not a refusal that reads as if the work was
    lost. Anything new is still refused."""
    if submission_id is None:
        return None
    sent = Annotation.objects.filter(assignment=assignment, submission_id=submission_id).first()
    if sent is None or sent.answer != answer:
        return None
    current = Annotation.objects.filter(assignment=assignment, is_current=True).first()
    return current or sent


def _check_may_write(assignment: Assignment) -> None:
    """Only current annotators who are not disqualified may change work: a removed member keeps
    nothing but read access to nothing, and a disqualified one's answers stay as recorded."""
    membership = (
        Membership.objects.current()
        .filter(project_id=assignment.project_id, user_id=assignment.annotator_id)
        .values_list("role", "qualification")
        .first()
    )
    if membership is None or membership[0] != Membership.Role.ANNOTATOR:
        raise WorkflowError(
            gettext("You are no longer an annotator in this project."), code="forbidden"
        )
    if membership[1] == Membership.Qualification.DISQUALIFIED:
        raise WorkflowError(
            gettext("This study is closed for you; everything you submitted is kept as recorded."),
            code="forbidden",
        )


def draft_save(
    *, assignment: Assignment, answer: dict, time_spent_ms: int, revision: int
) -> Draft | None:
    """Autosave unfinished work. Partial answers are fine; only size is checked. A draft with a
    revision not newer than the stored one is ignored (late, out-of-order autosaves), and so is
    one not newer than what was submitted (an autosave that was in flight during the submit must
    not come back over the submitted answer); None is returned then."""
    if not isinstance(answer, dict):
        raise WorkflowError(gettext("A draft must be a JSON object."))
    if len(json.dumps(answer)) > MAX_DRAFT_BYTES:
        raise WorkflowError(gettext("The draft is too large."), code="too_large")
    _check_may_write(assignment)
    with transaction.atomic():
        floor = (
            Assignment.objects.select_for_update()
            .values_list("submitted_revision", flat=True)
            .get(pk=assignment.pk)
        )
        if revision <= floor:
            return None
        draft, created = Draft.objects.get_or_create(
            assignment=assignment,
            defaults={"answer": answer, "time_spent_ms": time_spent_ms, "revision": revision},
        )
        if not created and revision > draft.revision:
            draft.answer = answer
            draft.time_spent_ms = max(time_spent_ms, 0)
            draft.revision = revision
            draft.save(update_fields=["answer", "time_spent_ms", "revision", "updated_at"])
    return draft


ITEM_COMPLETE_IDS = uuid.UUID("6f1c3e52-2d7e-4d0e-9a3e-3a4c2f0b7c11")  # uuid5 namespace


def _announce_submit(*, project: Project, annotation_id: int, item: Item, version: int) -> None:
    """Webhook events of a stored answer, sent after the commit to the project's subscribers
    (``webhooks``): ``answer.submitted``, and ``item.complete`` when this first answer of an
    assignment gave a regular item its last required one (a fixed id per item: sent once). One
    emit for both, so the subscriptions are read once per submit."""
    events = [
        Event(event=webhook_events.ANSWER_SUBMITTED, data=lambda: _answer_event(annotation_id))
    ]
    if version == 1 and item.kind == Item.Kind.REGULAR:
        events.append(
            Event(
                event=webhook_events.ITEM_COMPLETE,
                data=lambda: _item_complete_event(item.pk, project.annotators_per_item),
                event_id=uuid.uuid5(ITEM_COMPLETE_IDS, f"{project.id}:{item.pk}"),
            )
        )
    events_emit(project_id=project.id, events=events)


def _pseudonym(project_id: int, user_id: int) -> str:
    return (
        Membership.objects.filter(project_id=project_id, user_id=user_id)
        .values_list("pseudonym", flat=True)
        .first()
        or ""
    )


def _answer_event(annotation_id: int) -> dict:
    annotation = Annotation.objects.select_related("item").get(pk=annotation_id)
    return {
        "annotation": annotation.pk,
        "version": annotation.version,
        "item": annotation.item_id,
        "item_external_id": annotation.item.external_id,
        "annotator": _pseudonym(annotation.item.project_id, annotation.annotator_id),
        "answer": annotation.answer,
        "time_spent_ms": annotation.time_spent_ms,
        "submitted_at": annotation.created_at.isoformat(),
    }


def _item_complete_event(item_id: int, wanted: int) -> dict | None:
    item = Item.objects.filter(pk=item_id).values("external_id", "submitted_count").first()
    if item is None or item["submitted_count"] < wanted:
        return None
    return {"item": item_id, "item_external_id": item["external_id"], "answers": wanted}


def annotation_submit(
    *,
    assignment: Assignment,
    answer: dict,
    time_spent_ms: int = 0,
    submission_id: uuid.UUID | None = None,
    revision: int = 0,
) -> tuple[Annotation, bool]:
    """Validate and store an answer; returns (annotation, created). ``revision`` is the client's
    draft revision at submit time: autosaves up to it are ignored from now on.

    Idempotent: the same ``submission_id`` (a retried request, even one that a later submit has
    since replaced) or an answer identical to the current one (a resubmit with a new id after the
    client saw an error) returns the current annotation, and nothing is stored (a retry also
    when the annotator may no longer write). A different answer on an already submitted
    assignment becomes a new version; earlier versions are kept. Answers on control and
    qualification items are scored against gold, and quality runs in the same transaction."""
    item = assignment.item
    project = assignment.project
    task_type = task_types.get(project.task_type)
    serializer = task_type.answer_serializer(data=answer, context={"item": item})
    if not serializer.is_valid():
        raise AnswerInvalid(serializer.errors)
    clean = serializer.validated_data
    landed = _may_write_or_landed(assignment, submission_id, clean)
    if landed is not None:
        return landed, False
    correct = quality.is_correct(task_type, item, clean)
    submission_id = submission_id or uuid.uuid4()
    reported = max(int(time_spent_ms), 0)
    now = timezone.now()

    with transaction.atomic():
        locked = _locked_for_submit(assignment)
        locked.project = project
        current, retried = _current_and_retried(locked, submission_id)
        if current is not None and (
            current.submission_id == submission_id or current.answer == clean
        ):
            if current.submission_id != submission_id:  # the annotator confirmed it unchanged
                _settle_send_back(locked, current.version, now)
            return current, False
        if retried is not None:
            # A retry of a submit that a later one (another tab) has since replaced: what is
            # stored now is the answer, as for any other retry.
            return current or retried, False

        if locked.state == Assignment.State.SKIPPED:  # its place went to someone else
            raise WorkflowError(
                gettext("You skipped this item, so it cannot be answered now."), code="conflict"
            )
        if locked.state == Assignment.State.EXPIRED:
            _reactivate_expired(locked, item)

        # What touches no counter row first: from the answer's INSERT to the commit the triggers
        # hold the project's answer counter row, which every other submit in it waits for.
        Draft.objects.filter(assignment=locked).delete()
        version = 1
        if current is not None:
            version = current.version + 1
            Annotation.objects.filter(pk=current.pk).update(is_current=False)
        annotation = _store_version(
            locked, clean, version=version, submission_id=submission_id, reported=reported, now=now
        )
        if version > 1:
            _settle_send_back(locked, version, now)
        changes: dict[str, Any] = {
            "correct": correct,
            "submitted_revision": max(locked.submitted_revision, revision),
        }
        if locked.state != Assignment.State.SUBMITTED:
            changes.update(state=Assignment.State.SUBMITTED, submitted_at=now)
        Assignment.objects.filter(pk=locked.pk).update(**changes)
        locked.state = Assignment.State.SUBMITTED
        quality.after_submit(assignment=locked, project=project, item=item)
        _announce_submit(project=project, annotation_id=annotation.pk, item=item, version=version)
    assignment.state = Assignment.State.SUBMITTED
    assignment.correct = correct
    return annotation, True


def _current_and_retried(
    locked: Assignment, submission_id: uuid.UUID
) -> tuple[Annotation | None, Annotation | None]:
    """The assignment's current answer version and the version stored under ``submission_id``
    (a retried request), from one query: at most two rows (one current version, one per
    submission id: ``annotation_unique_submission``); every submit reads them."""
    current = retried = None
    for row in Annotation.objects.filter(assignment=locked).filter(
        Q(is_current=True) | Q(submission_id=submission_id)
    ):
        if row.is_current:
            current = row
        if row.submission_id == submission_id:
            retried = row
    return current, retried


def _settle_send_back(locked: Assignment, version: int, now) -> None:
    """The annotator submitted a sent-back answer again: its send-back is answered by
    ``version`` (a first answer cannot have one)."""
    SendBack.objects.filter(assignment=locked, answered_at__isnull=True).update(
        answered_version=version, answered_at=now
    )


def _store_version(
    locked: Assignment, answer: dict, *, version: int, submission_id, reported: int, now
) -> Annotation:
    """The new current answer version of ``locked`` (its row lock held), with the active time
    the server accepts, the assignment's presentation and the settings version in force."""
    try:
        return Annotation.objects.create(
            assignment=locked,
            item_id=locked.item_id,
            annotator_id=locked.annotator_id,
            answer=answer,
            version=version,
            is_current=True,
            submission_id=submission_id,
            time_spent_ms=_server_time_ms(locked, reported=reported, now=now),
            reported_time_ms=reported,
            presentation=locked.presentation,
            settings_version=locked.settings_now,  # type: ignore[attr-defined]  # an annotation
            item_revision=locked.item_revision_now,  # type: ignore[attr-defined]  # an annotation
        )
    except IntegrityError:  # pragma: no cover - guarded by the row lock
        raise WorkflowError(gettext("This answer was already recorded."), code="conflict") from None


def _locked_for_submit(assignment: Assignment) -> Assignment:
    """The assignment's row, locked, with the project's settings version in force now (not when
    the page was loaded) as ``settings_now`` and the item's revision as ``item_revision_now``: the
    lock is on the assignment alone (OF self), so submits never wait on the project row."""
    return (
        Assignment.objects.select_for_update(of=("self",))
        .annotate(
            settings_now=F("project__settings_version"), item_revision_now=F("item__revision")
        )
        .get(pk=assignment.pk)
    )


def assignment_reopen(*, assignment: Assignment) -> None:
    """Record that the annotator opened their submitted assignment (to revise it): the next
    version's active time counts from now. An open reservation is left as it is."""
    if assignment.state != Assignment.State.SUBMITTED:
        return
    assignment.reopened_at = timezone.now()
    Assignment.objects.filter(pk=assignment.pk).update(reopened_at=assignment.reopened_at)


def _server_time_ms(assignment: Assignment, *, reported: int, now) -> int:
    """The active time the server accepts for a submit: the browser's figure, never more than the
    time since the work on it could have begun. That is the reservation, or the reopening of a
    submitted assignment, or the annotator's previous submit in the project (one person works on
    one answer at a time: a batch reserved at once, or a second tab, does not multiply time)."""
    starts = [assignment.reserved_at, assignment.reopened_at]
    starts.append(
        Annotation.objects.filter(
            assignment__project_id=assignment.project_id,
            annotator_id=assignment.annotator_id,
            created_at__lte=now,
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    start = max(moment for moment in starts if moment is not None)
    elapsed_ms = max(int((now - start).total_seconds() * 1000), 0)
    return min(reported, elapsed_ms)


def _reactivate_expired(assignment: Assignment, item: Item) -> None:
    """Let a late annotator submit on an expired reservation if the item still has room; otherwise
    refuse clearly (their draft stays on the server). Control and qualification items always
    have room. A disqualified annotator's expired work is closed."""
    if Membership.objects.filter(
        project_id=assignment.project_id,
        user_id=assignment.annotator_id,
        qualification=Membership.Qualification.DISQUALIFIED,
    ).exists():
        raise WorkflowError(
            gettext("This item is closed for you; your draft is kept."), code="conflict"
        )
    if item.kind != Item.Kind.REGULAR:
        return
    item = Item.objects.select_for_update().get(pk=assignment.item_id)
    if item.assigned_count >= assignment.project.annotators_per_item:
        raise WorkflowError(
            gettext(
                "Your reservation of this item expired and it has since been given to other annotators. "
                "Your draft is kept."
            ),
            code="conflict",
        )
    Item.objects.filter(pk=item.pk).update(assigned_count=F("assigned_count") + 1)


BULK_ANALYZE_ROWS = 1000
BULK_MODELS = (Item, Assignment, Annotation)


def statistics_refresh(
    *, rows: int, model_classes: tuple[type[models.Model], ...] = BULK_MODELS
) -> bool:
    """After a bulk write of ``rows`` rows (an import), refresh the planner's statistics with
    ANALYZE so that the free-item lookup and the reports are planned for the table as it is now:
    this PostgreSQL runs no autovacuum, and production ones lag behind bulk writes. Only on
    PostgreSQL and from ``BULK_ANALYZE_ROWS`` rows; call it after the import's transaction.
    The JSON columns are left out: no query filters on them, and reading their sampled
    (compressed, out-of-line) values took most of the ANALYZE's time (445 against 68 ms after a
    10k import). Returns whether it ran."""
    if rows < BULK_ANALYZE_ROWS or connection.vendor != "postgresql":
        return False
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in model_classes:
            columns = ", ".join(
                quote(str(field.column))
                for field in model._meta.concrete_fields
                if not isinstance(field, models.JSONField)
            )
            cursor.execute(f"ANALYZE {quote(model._meta.db_table)} ({columns})")
    return True


def counts_rebuild(*, project_ids: list[int] | None = None) -> int:
    """Recompute what the database triggers keep (``Item.is_full``, ``Item.submitted_count``,
    ``ProjectItemCounts``, ``ProjectAnswerCounts``, ``AnnotatorAnswerCounts``,
    ``ExternalAnswerCounts``) from the rows, for
    the given projects or all; returns how many projects. The revision numbers move forward (a
    cached report is recomputed once), never back. For repairs (a restore that bypassed the
    triggers) and for checking them."""
    projects = Project.objects.order_by("pk")
    if project_ids is not None:
        projects = projects.filter(pk__in=project_ids)
    count = 0
    for project_id, per_item in projects.values_list("pk", "annotators_per_item"):
        with transaction.atomic():
            Project.objects.select_for_update(no_key=True).filter(pk=project_id).values_list(
                "pk"
            ).first()
            items = Item.objects.filter(project_id=project_id)
            items.filter(is_full=True).exclude(
                kind=Item.Kind.REGULAR, assigned_count__gte=per_item
            ).update(is_full=False)
            items.filter(
                is_full=False, kind=Item.Kind.REGULAR, assigned_count__gte=per_item
            ).update(is_full=True)
            submitted = Assignment.objects.filter(
                project_id=project_id, state=Assignment.State.SUBMITTED
            )
            actual = Coalesce(
                Subquery(
                    submitted.filter(item=OuterRef("pk"))
                    .values("item")
                    .annotate(n=Count("id"))
                    .values("n")
                ),
                0,
            )
            items.annotate(actual=actual).exclude(submitted_count=F("actual")).update(
                submitted_count=actual
            )
            totals = items.aggregate(
                items=Count("id"),
                regular=Count("id", filter=Q(kind=Item.Kind.REGULAR)),
                complete=Count(
                    "id", filter=Q(kind=Item.Kind.REGULAR, submitted_count__gte=per_item)
                ),
            )
            ProjectItemCounts.objects.update_or_create(
                project_id=project_id,
                defaults={"items": totals["items"], "regular_items": totals["regular"]},
            )
            ProjectItemCounts.objects.filter(project_id=project_id).update(
                items_revision=F("items_revision") + 1
            )
            ProjectAnswerCounts.objects.update_or_create(
                project_id=project_id,
                defaults={
                    "submitted": submitted.count(),
                    "complete_items": totals["complete"],
                    "annotations": Annotation.objects.filter(item__project_id=project_id).count(),
                },
            )
            ProjectAnswerCounts.objects.filter(project_id=project_id).update(
                annotations_revision=F("annotations_revision") + 1
            )
            _annotator_counts_rebuild(project_id=project_id, submitted=submitted)
            external_answers.answers_recount(project_id=project_id)
            for rebuild in hooks.counter_rebuilds:  # higher apps' counters (judge results)
                rebuild(project_id=project_id)
        count += 1
    return count


def _annotator_counts_rebuild(*, project_id: int, submitted) -> None:
    """Each annotator's submitted count from ``submitted`` (the project's submitted
    assignments): rows of annotators with none go, the others in one upsert."""
    per_annotator = dict(
        submitted.values("annotator_id").annotate(n=Count("id")).values_list("annotator_id", "n")
    )
    AnnotatorAnswerCounts.objects.filter(project_id=project_id).exclude(
        annotator_id__in=per_annotator
    ).delete()
    AnnotatorAnswerCounts.objects.bulk_create(
        [
            AnnotatorAnswerCounts(project_id=project_id, annotator_id=annotator_id, submitted=n)
            for annotator_id, n in per_annotator.items()
        ],
        update_conflicts=True,
        unique_fields=["project", "annotator"],
        update_fields=["submitted"],
    )


__all__ = [
    "AnswerInvalid",
    "WorkflowError",
    "annotation_submit",
    "assignment_next",
    "counts_rebuild",
    "draft_save",
    "reservations_reclaim",
    "statistics_refresh",
]


def membership_language_set(*, membership: Membership, language: str) -> Membership:
    """Keep the language the member chose for their annotation pages (``""``: their browser's).
    The caller checks it is one of ``settings.LANGUAGES``."""
    if membership.language != language:
        membership.language = language
        membership.save(update_fields=["language"])
    return membership
