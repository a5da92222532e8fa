"""Review and adjudication: items where annotators disagree, the majority vote, final answers.

Agreement follows the task type: two answers agree when their ``answer_key`` (the part named by
the task type's ``agreement_key`` hook, or the whole answer) is equal. The majority is a key held
by more than half of the counted answers; answers of disqualified annotators are not counted.
A reviewer's final answer is validated like an annotator's and versioned like annotations.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import groupby

from django.db import transaction
from django.http import Http404

from annotation import task_types
from annotation.models import Adjudication, Annotation, Item, SendBack
from annotation.references import item_reference
from annotation.services import AnswerInvalid
from projects.models import Membership


def majority_key(keys: list[str]) -> str | None:
    """The key held by more than half of ``keys``, or None (no answers, or no strict majority)."""
    if not keys:
        return None
    key, count = Counter(keys).most_common(1)[0]
    return key if count * 2 > len(keys) else None


def excluded_annotators(project) -> set[int]:
    """Users whose answers agreement, majority and review leave out by default."""
    return set(
        Membership.objects.filter(
            project=project, qualification=Membership.Qualification.DISQUALIFIED
        ).values_list("user_id", flat=True)
    )


def disputed_items(*, project, unresolved_only: bool = False) -> list[dict]:
    """Regular items with at least two counted answers that do not all agree, in queue order.
    One pass over the project's current annotations (three queries)."""
    task_type = task_types.get(project.task_type)
    excluded = excluded_annotators(project)
    adjudicated = set(
        Adjudication.objects.filter(item__project=project, is_current=True).values_list(
            "item_id", flat=True
        )
    )
    rows = (
        Annotation.objects.filter(
            item__project=project, item__kind=Item.Kind.REGULAR, is_current=True
        )
        .order_by("item__position", "item_id")
        .values_list("item_id", "item__external_id", "annotator_id", "answer")
    )
    disputed = []
    for (item_id, external_id), group in groupby(rows.iterator(), key=lambda r: (r[0], r[1])):
        keys = [task_type.answer_key(answer) for _, _, who, answer in group if who not in excluded]
        if len(keys) < 2 or len(set(keys)) == 1:
            continue
        if unresolved_only and item_id in adjudicated:
            continue
        disputed.append(
            {
                "item_id": item_id,
                "external_id": external_id,
                "reference": item_reference(item_id=item_id),
                "answers": len(keys),
                "distinct": len(set(keys)),
                "majority": majority_key(keys) is not None,
                "adjudicated": item_id in adjudicated,
            }
        )
    return disputed


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
