"""Review and adjudication: items where annotators disagree, the majority vote, final answers.

Agreement follows the task type: two answers agree when their ``answer_key`` (the part named by
the task type's ``agreement_key`` hook, or the whole answer) is equal. The majority is a key held
by more than half of the counted answers; answers of disqualified annotators are not counted.
A reviewer's final answer is validated like an annotator's and versioned like annotations.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q
from django.http import Http404

from annotation import task_types
from annotation.models import Adjudication, Annotation, Item, SendBack
from annotation.references import item_reference
from annotation.services import AnswerInvalid
from projects.models import Membership


def majority_key(keys: list[str]) -> str | None:
    """The key held by more than half of ``keys``, or None (no answers, or no strict majority).
    An item has a handful of answers (an export asks once per item): a key held by more than
    half is among the first half and one, so those are counted (in C) rather than a ``Counter``
    made; many keys are counted with one."""
    if len(keys) > 16:
        key, count = Counter(keys).most_common(1)[0]
        return key if count * 2 > len(keys) else None
    for key in keys[: len(keys) // 2 + 1]:
        if keys.count(key) * 2 > len(keys):
            return key
    return None


def excluded_annotators(project) -> set[int]:
    """Users whose answers agreement, majority and review leave out by default."""
    return set(
        Membership.objects.filter(
            project=project, qualification=Membership.Qualification.DISQUALIFIED
        ).values_list("user_id", flat=True)
    )


# The review list's page, and how many items one step of its walk reads.
REVIEW_PAGE = 50
WALK_CHUNK = 500


@dataclass(frozen=True)
class DisputedPage:
    """Disputed items in queue order from a cursor: ``rows`` as :func:`disputed_items`'
    dicts, ``next_after`` the cursor (queue position, item id) of the following page (None: no
    more)."""

    rows: list[dict]
    next_after: tuple[int, int] | None


def disputed_items(*, project, unresolved_only: bool = False) -> list[dict]:
    """Regular items with at least two counted answers that do not all agree, in queue order
    (every one: a walk over all the project's current annotations; pages use
    :func:`disputed_page`)."""
    return disputed_page(project=project, unresolved_only=unresolved_only, limit=None).rows


def disputed_page(
    *,
    project,
    unresolved_only: bool = False,
    after: tuple[int, int] = (-1, 0),
    limit: int | None,
) -> DisputedPage:
    """The first ``limit`` disputed items after ``after`` (queue position, item id). The items
    are walked in queue order by keyset, ``WALK_CHUNK`` at a time (three queries a step), and the
    walk stops as soon as the page is full: a page costs what it shows (and the stretch of agreed items
    before it), not the project's size. Only items with two or more submitted answers
    (``Item.submitted_count``, kept by the database) can be disputed, so only those are walked:
    a large study with few answers is not read item by item (``item_reviewable_idx``, a
    partial index of those items in queue order, serves the walk)."""
    task_type = task_types.get(project.task_type)
    excluded = excluded_annotators(project)
    rows: list[dict] = []
    cursor = after
    while limit is None or len(rows) < limit:
        position, last_id = cursor
        chunk = list(
            Item.objects.filter(project=project, kind=Item.Kind.REGULAR, submitted_count__gte=2)
            .filter(Q(position__gt=position) | Q(position=position, id__gt=last_id))
            .order_by("position", "id")
            .values_list("id", "external_id", "position")[:WALK_CHUNK]
        )
        if not chunk:
            return DisputedPage(rows=rows, next_after=None)
        disputed = _disputed_of(task_type, chunk, excluded, unresolved_only)
        for row, place in disputed:
            rows.append(row)
            if limit is not None and len(rows) == limit:
                return DisputedPage(rows=rows, next_after=place)
        cursor = (chunk[-1][2], chunk[-1][0])
        if len(chunk) < WALK_CHUNK:
            return DisputedPage(rows=rows, next_after=None)
    return DisputedPage(rows=rows, next_after=cursor)


def _disputed_of(task_type, chunk, excluded: set[int], unresolved_only: bool) -> list:
    """(row, position) for the disputed items among ``chunk`` (id, external id, position)."""
    ids = [item_id for item_id, _, _ in chunk]
    keys: dict[int, list[str]] = {item_id: [] for item_id in ids}
    for item_id, who, answer in Annotation.objects.filter(
        item_id__in=ids, is_current=True
    ).values_list("item_id", "annotator_id", "answer"):
        if who not in excluded:
            keys[item_id].append(task_type.answer_key(answer))
    adjudicated = set(
        Adjudication.objects.filter(item_id__in=ids, is_current=True).values_list(
            "item_id", flat=True
        )
    )
    found = []
    for item_id, external_id, position in chunk:
        item_keys = keys[item_id]
        if len(item_keys) < 2 or len(set(item_keys)) == 1:
            continue
        if unresolved_only and item_id in adjudicated:
            continue
        row = {
            "item_id": item_id,
            "external_id": external_id,
            "reference": item_reference(item_id=item_id),
            "answers": len(item_keys),
            "distinct": len(set(item_keys)),
            "majority": majority_key(item_keys) is not None,
            "adjudicated": item_id in adjudicated,
        }
        found.append((row, (position, item_id)))
    return found


def review_item(*, project, item_id: int) -> dict:
    """One item for a reviewer: what annotators saw, every current answer (with who and whether it
    counts), the majority and the current final answer. 404 for items of other projects."""
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None:
        raise Http404("No such item.")
    task_type = task_types.get(project.task_type)
    members = {
        m.user_id: m
        for m in Membership.objects.filter(project=project).only(
            "user_id", "pseudonym", "qualification"
        )
    }
    answers = []
    counted = []
    waiting = set(
        SendBack.objects.filter(assignment__item=item, answered_at__isnull=True).values_list(
            "assignment_id", flat=True
        )
    )
    for annotation in Annotation.objects.filter(item=item, is_current=True).order_by(
        "created_at", "id"
    ):
        member = members.get(annotation.annotator_id)
        excluded = (
            member is not None and member.qualification == Membership.Qualification.DISQUALIFIED
        )
        key = task_type.answer_key(annotation.answer)
        if not excluded:
            counted.append(key)
        answers.append(
            {
                "annotation_id": annotation.pk,
                "sent_back": annotation.assignment_id in waiting,
                "annotator": member.pseudonym
                if member
                else f"ann-removed-{annotation.annotator_id}",
                "answer": annotation.answer,
                "key": key,
                "excluded": excluded,
                "time_spent_s": round(annotation.time_spent_ms / 1000, 1),
            }
        )
    majority = majority_key(counted)
    adjudication = (
        Adjudication.objects.filter(item=item, is_current=True).select_related("reviewer").first()
    )
    return {
        "item": item,
        "display": task_type.display(item),
        "answers": answers,
        "majority": json.loads(majority) if majority is not None else None,
        "majority_key": majority,
        "adjudication": adjudication,
    }


def item_majority(task_type, annotations, excluded: set[int]) -> object | None:
    """The majority value (decoded key) among ``annotations`` of one item, or None."""
    keys = [task_type.answer_key(a.answer) for a in annotations if a.annotator_id not in excluded]
    key = majority_key(keys)
    return json.loads(key) if key is not None else None


def adjudication_record(*, item: Item, reviewer, answer: dict, note: str = "") -> Adjudication:
    """Record a reviewer's final answer for ``item``, validated by the task type like an
    annotator's; an earlier decision stays as an older version."""
    task_type = task_types.get(item.project.task_type)
    serializer = task_type.answer_serializer(data=answer, context={"item": item})
    if not serializer.is_valid():
        raise AnswerInvalid(serializer.errors)
    with transaction.atomic():
        Item.objects.select_for_update().filter(pk=item.pk).values_list("pk").first()
        current = Adjudication.objects.filter(item=item, is_current=True).first()
        if current is not None:
            if current.answer == serializer.validated_data and current.note == note:
                return current
            Adjudication.objects.filter(pk=current.pk).update(is_current=False)
        return Adjudication.objects.create(
            item=item,
            reviewer=reviewer,
            answer=serializer.validated_data,
            note=note,
            version=(current.version + 1) if current else 1,
        )
