"""Quality control: control items, running accuracy, qualification rounds, researcher decisions.

Rules (settings in ``projects.crowd``):
- An answer on a control or qualification item is scored by the task type's ``score(answer,
  gold)``; it is right when the result's ``"correct"`` is true. Task types get quality control for
  free by returning ``correct`` from ``score()``.
- Accuracy on controls is checked after every submit (regular or control alike, so the two cost
  the same and a submit's timing does not tell them apart). Once an annotator has answered
  ``min_controls`` controls and their accuracy is below ``accuracy_threshold``, they are
  disqualified: their open reservations go back to the pool, their open batch stops, their
  answers stay (flagged through ``Membership.qualification``) and agreement leaves them out.
- A qualification round is scored when its last item is submitted: it passes with accuracy at or
  above the pass mark *and* at least the minimum active time for the whole round.
- A researcher's decision (qualify, disqualify) is final: automatic rules leave that member alone
  until the researcher hands them back to the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from annotation.models import Annotation, Assignment, Batch, Item
from core.errors import Refusal
from projects.audit import AuditKind, audit_record
from projects.crowd import CrowdSettings, crowd_settings
from projects.models import Membership
from webhooks import events as webhook_events
from webhooks.services import event_emit

if TYPE_CHECKING:
    from datetime import datetime

    from django.contrib.auth.models import User

Qualification = Membership.Qualification
Reason = Membership.QualificationReason
GOLD_KINDS = (Item.Kind.CONTROL, Item.Kind.QUALIFICATION)


def is_correct(task_type, item: Item, answer: dict) -> bool | None:
    """Whether ``answer`` matches the gold of a control or qualification item; None for regular
    items (their gold, when a task type derives one, is for evaluation, not quality control)."""
    if item.kind not in GOLD_KINDS or item.gold is None:
        return None
    return bool(task_type.score(answer, item.gold).get("correct"))


def needs_qualification(crowd: CrowdSettings, membership: Membership) -> bool:
    return crowd.qualification_required and membership.qualification not in (
        Qualification.QUALIFIED,
        Qualification.DISQUALIFIED,
    )


def expire_open_work(*, project_id: int, annotator_id: int | None = None, now=None) -> int:
    """Expire reserved assignments past their deadline (or, with ``annotator_id``, all of that
    annotator's reservations) and give their places back; abandon batches left without a live
    reservation. The caller holds a transaction."""
    now = now or timezone.now()
    reserved = Assignment.objects.filter(project_id=project_id, state=Assignment.State.RESERVED)
    if annotator_id is None:
        reserved = reserved.filter(expires_at__lt=now)
    else:
        reserved = reserved.filter(annotator_id=annotator_id)
    expired = list(
        reserved.select_for_update(skip_locked=True, of=("self",)).values_list(
            "id", "item_id", "item__kind"
        )
    )
    if expired:
        Assignment.objects.filter(id__in=[a for a, _, _ in expired]).update(
            state=Assignment.State.EXPIRED
        )
        _give_places_back([item_id for _, item_id, kind in expired if kind == Item.Kind.REGULAR])
    return len(expired)


def _give_places_back(item_ids: list[int]) -> None:
    # Decrement relative to the current value (F), grouped by how many places each item gets
    # back, so the number of statements is bounded by N, not by the number of items.
    per_item: dict[int, int] = {}
    for item_id in item_ids:
        per_item[item_id] = per_item.get(item_id, 0) + 1
    by_amount: dict[int, list[int]] = {}
    for item_id, amount in per_item.items():
        by_amount.setdefault(amount, []).append(item_id)
    if len(by_amount) > 1:
        # Several statements: lock their items in one order (by id) first, so that two
        # requests giving back places on the same items never lock them in opposite orders.
        list(Item.objects.select_for_update().filter(id__in=per_item).order_by("id").values("id"))
    for amount, ids in by_amount.items():
        Item.objects.filter(id__in=ids).update(assigned_count=F("assigned_count") - amount)


def abandon_expired_batches(*, project_id: int, now) -> int:
    return Batch.objects.filter(
        project_id=project_id, state=Batch.State.OPEN, expires_at__lt=now
    ).update(state=Batch.State.ABANDONED)


def after_submit(*, assignment: Assignment, project, item: Item) -> None:
    """Bookkeeping after a stored submit, inside its transaction: finish the batch when this
    was its last item (and score it if it was a qualification round), then check the
    annotator's accuracy on controls."""
    crowd = crowd_settings(project)
    finished = None
    if assignment.batch_id is not None:
        finished = _finish_batch_if_done(assignment)
    if finished is not None:
        event_emit(
            project_id=project.id,
            event=webhook_events.BATCH_FINISHED,
            data=lambda: _batch_event(finished),
        )
    if finished is not None and finished.kind == Batch.Kind.QUALIFICATION:
        membership = _membership(project.id, assignment.annotator_id)
        if membership is not None:
            _score_qualification_round(finished, crowd, membership)
    elif crowd.controls and item.kind != Item.Kind.QUALIFICATION:
        membership = _membership(project.id, assignment.annotator_id)
        if membership is not None:
            check_control_accuracy(project_id=project.id, membership=membership, crowd=crowd)


def _batch_event(batch: Batch) -> dict:
    """What ``batch.finished`` says (webhooks): never the completion code."""
    pseudonym = (
        Membership.objects.filter(project_id=batch.project_id, user_id=batch.annotator_id)
        .values_list("pseudonym", flat=True)
        .first()
    )
    return {
        "batch": batch.pk,
        "kind": batch.kind,
        "number": batch.number,
        "size": batch.size,
        "annotator": pseudonym or "",
        "platform_session": batch.external_ref,
        "finished_at": batch.finished_at.isoformat() if batch.finished_at else None,
    }


def _membership(project_id: int, user_id: int) -> Membership | None:
    return Membership.objects.filter(project_id=project_id, user_id=user_id).first()


def _finish_batch_if_done(assignment: Assignment) -> Batch | None:
    left = (
        Assignment.objects.filter(batch_id=assignment.batch_id)
        .exclude(pk=assignment.pk)
        .exclude(state=Assignment.State.SUBMITTED)
        .exists()
    )
    if left:
        return None
    now = timezone.now()
    if not Batch.objects.filter(pk=assignment.batch_id, state=Batch.State.OPEN).update(
        state=Batch.State.FINISHED, finished_at=now
    ):
        return None  # already finished (a revision), stopped or abandoned
    return Batch.objects.get(pk=assignment.batch_id)


def control_accuracy(*, project_id: int, annotator_id: int) -> tuple[int, int]:
    """(controls answered, controls right) for one annotator."""
    stats = Assignment.objects.filter(
        project_id=project_id,
        annotator_id=annotator_id,
        item__kind=Item.Kind.CONTROL,
        correct__isnull=False,
    ).aggregate(answered=Count("id"), right=Count("id", filter=Q(correct=True)))
    return stats["answered"], stats["right"]


def check_control_accuracy(
    *, project_id: int, membership: Membership, crowd: CrowdSettings
) -> bool:
    """Disqualify the member when their accuracy on controls is below the threshold after the
    minimum number of controls. Returns whether they were disqualified now."""
    if (
        membership.qualification_by_researcher
        or membership.qualification == Qualification.DISQUALIFIED
    ):
        return False
    answered, right = control_accuracy(project_id=project_id, annotator_id=membership.user_id)
    if answered < crowd.min_controls or right / answered >= crowd.accuracy_threshold:
        return False
    _set_state(membership, Qualification.DISQUALIFIED, Reason.CONTROL_ACCURACY, by_researcher=False)
    return True


def _score_qualification_round(batch: Batch, crowd: CrowdSettings, membership: Membership) -> None:
    if membership.qualification_by_researcher:
        return
    stats = Assignment.objects.filter(batch=batch).aggregate(
        total=Count("id"), right=Count("id", filter=Q(correct=True))
    )
    active_ms = (
        Annotation.objects.filter(assignment__batch=batch).aggregate(ms=Sum("time_spent_ms"))["ms"]
        or 0
    )
    accuracy = stats["right"] / stats["total"] if stats["total"] else 0.0
    if (
        accuracy >= crowd.qualification_pass_mark
        and active_ms >= crowd.qualification_min_seconds * 1000
    ):
        _set_state(
            membership, Qualification.QUALIFIED, Reason.QUALIFICATION_PASSED, by_researcher=False
        )
        return
    rounds = Batch.objects.filter(
        project_id=batch.project_id,
        annotator_id=batch.annotator_id,
        kind=Batch.Kind.QUALIFICATION,
        state=Batch.State.FINISHED,
    ).count()
    if rounds >= crowd.qualification_rounds:
        _set_state(
            membership, Qualification.DISQUALIFIED, Reason.QUALIFICATION_FAILED, by_researcher=False
        )
    else:
        _set_state(
            membership, Qualification.PENDING, Reason.QUALIFICATION_RETRY, by_researcher=False
        )


def _set_state(membership: Membership, state: str, reason: str, *, by_researcher: bool) -> None:
    now = timezone.now()
    Membership.objects.filter(pk=membership.pk).update(
        qualification=state,
        qualification_reason=reason,
        qualification_by_researcher=by_researcher,
        qualification_changed_at=now,
    )
    membership.qualification = state
    membership.qualification_reason = reason
    membership.qualification_by_researcher = by_researcher
    membership.qualification_changed_at = now
    if state == Qualification.DISQUALIFIED:
        open_work_release(project_id=membership.project_id, user_id=membership.user_id, now=now)


def open_work_release(*, project_id: int, user_id: int, now: datetime) -> None:
    """Give back an annotator's reservations and stop their open batches (disqualified, removed
    from the project or given another role: ``projects.hooks.annotator_left``). The caller
    holds a transaction. Their drafts stay with their assignments."""
    expire_open_work(project_id=project_id, annotator_id=user_id, now=now)
    Batch.objects.filter(
        project_id=project_id, annotator_id=user_id, state=Batch.State.OPEN
    ).update(state=Batch.State.STOPPED, finished_at=now)


DECISIONS = ("qualify", "disqualify", "automatic")


def qualification_decide(
    *, membership: Membership, decision: str, by: User | None = None
) -> Membership:
    """A researcher qualifies or disqualifies a member by hand (final until changed), or hands
    them back to the automatic rules, which then apply at once. ``by``: who, for the project's
    audit log."""
    if decision not in DECISIONS:
        raise ValueError(f"Unknown decision {decision!r}; choose one of {', '.join(DECISIONS)}.")
    before = membership.qualification
    with transaction.atomic():
        if decision == "qualify":
            _set_state(membership, Qualification.QUALIFIED, Reason.RESEARCHER, by_researcher=True)
        elif decision == "disqualify":
            _set_state(
                membership, Qualification.DISQUALIFIED, Reason.RESEARCHER, by_researcher=True
            )
        else:
            crowd = crowd_settings(membership.project)
            state = (
                Qualification.PENDING
                if crowd.qualification_required
                else Qualification.NOT_REQUIRED
            )
            _set_state(membership, state, "", by_researcher=False)
            if crowd.controls:
                check_control_accuracy(
                    project_id=membership.project_id, membership=membership, crowd=crowd
                )
        audit_record(
            project=membership.project,
            actor=by,
            kind=AuditKind.QUALIFICATION_DECIDED,
            summary=f"Decided {decision} for {membership.user.username} "
            f"({before} → {membership.qualification}).",
            changes={
                "username": membership.user.username,
                "pseudonym": membership.pseudonym,
                "decision": decision,
                "qualification": {"before": before, "after": membership.qualification},
            },
        )
    return membership


def feedback_set(*, membership: Membership, feedback: str, by: User | None = None) -> Membership:
    """Feedback the annotator sees on their page (empty to remove it). Text with a NUL (which
    PostgreSQL cannot store) is refused. ``by``: who, for the project's audit log (nothing is
    logged when the feedback is the same)."""
    if "\x00" in feedback:
        raise Refusal("feedback: contains a NUL character.", field="feedback")
    before = Membership.objects.filter(pk=membership.pk).values_list("feedback", flat=True).first()
    membership.feedback = feedback.strip()
    if before == membership.feedback:
        return membership
    with transaction.atomic():
        Membership.objects.filter(pk=membership.pk).update(feedback=membership.feedback)
        audit_record(
            project=membership.project,
            actor=by,
            kind=AuditKind.FEEDBACK_SET,
            summary=f"{'Changed' if membership.feedback else 'Removed'} the feedback to "
            f"{membership.user.username}.",
            changes={
                "username": membership.user.username,
                "pseudonym": membership.pseudonym,
                "feedback": {"before": before or "", "after": membership.feedback},
            },
        )
    return membership
