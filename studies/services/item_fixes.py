"""Fixing one item's record: the researcher's answer to a flag such as "the evidence link is
dead" (issue 30), where a re-import is refused because the item has been handed out.

A fix replaces the item's record (validated and prepared as an import would, by the task type)
and moves ``Item.revision``; nothing else changes. Answers already made keep the revision they
were made on (``Annotation.item_revision``), so a researcher sees which answers saw the old
record; the judges' answers were computed on it and go (a re-run recomputes them). The audit
log keeps the record before and after.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from annotation import task_types
from annotation.models import Annotation, Item
from annotation.task_types import PayloadError
from core import json_safety
from core.errors import Refusal, first_error
from llm_judges.models import JudgeResult
from projects.audit import AuditKind, audit_record
from projects.models import Project
from studies.services.imports import prepare_record

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

# A record typed or pasted on the item page: the largest a task type's record needs.
MAX_RECORD_CHARACTERS = 2_000_000
MAX_NOTE = 2_000


@dataclass(frozen=True)
class ItemFix:
    item_id: int
    revision: int
    # Answers made on an earlier revision (current versions): they saw the record before.
    earlier_answers: int
    changed_fields: tuple[str, ...]


def item_record_text(*, item: Item) -> str:
    """The item's record as the fix form shows it: its imported record, indented."""
    return json.dumps(item.payload, ensure_ascii=False, indent=2, sort_keys=True)


def record_from_text(*, text: str) -> dict[str, Any]:
    """The record a researcher sent as JSON text (bounded, storable), or a refusal naming
    ``record``."""
    if len(text) > MAX_RECORD_CHARACTERS:
        raise Refusal(
            f"The record is {len(text):,} characters; at most {MAX_RECORD_CHARACTERS:,}.",
            field="record",
            code="too_large",
        )
    try:
        record = json_safety.loads(text)
    except json.JSONDecodeError as exc:
        raise Refusal(
            f"The record is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
            field="record",
        ) from None
    except json_safety.UnsafeJSON as exc:
        where = f" at {exc.field}" if exc.field else ""
        raise Refusal(
            f"The record cannot be stored{where}: {exc.message}", field="record"
        ) from None
    if not isinstance(record, dict):
        raise Refusal("The record must be a JSON object.", field="record")
    return record


def item_fix(
    *, project: Project, item_id: int, record: dict[str, Any], by: AbstractBaseUser, note: str = ""
) -> ItemFix:
    """Replace the record of the item ``item_id`` of ``project`` with ``record``, checked and
    prepared by the task type as an import is; the item keeps its external id and kind. Refuses
    (and changes nothing) when the record is invalid, names another item, or changes nothing."""
    if len(note) > MAX_NOTE:
        raise Refusal(f"The note is at most {MAX_NOTE:,} characters.", field="note")
    problem = json_safety.json_problem(record)  # the API's body is parsed, not checked, here
    if problem is not None:
        raise Refusal(f"The record cannot be stored: {problem}", field="record")
    task_type = task_types.get(project.task_type)
    try:
        config = task_type.validate_config(project.config)
    except ValidationError as exc:
        name, message = first_error(exc.detail)
        raise Refusal(f"The project configuration is invalid: {name}: {message}") from None
    with transaction.atomic():
        try:
            item = Item.objects.select_for_update().get(project=project, pk=item_id)
        except Item.DoesNotExist:
            raise Refusal("No such item in this project.", code="not_found") from None
        prepared = _prepared_for(item, task_type, config, record)
        before = {name: getattr(item, name) for name in ("payload", "prepared", "gold", "group")}
        after = {
            "payload": prepared.payload,
            "prepared": prepared.prepared,
            "gold": prepared.gold,
            "group": prepared.group,
        }
        changed = tuple(name for name in before if before[name] != after[name])
        if not changed:
            raise Refusal("The record is the same as the item's: nothing to fix.", field="record")
        Item.objects.filter(pk=item.pk).update(
            **after, revision=F("revision") + 1, updated_at=timezone.now()
        )
        item.refresh_from_db(fields=["revision"])
        JudgeResult.objects.filter(item_id=item.pk).delete()
        earlier = Annotation.objects.filter(
            item_id=item.pk, is_current=True, item_revision__lt=item.revision
        ).count()
        audit_record(
            project=project,
            actor=by,
            kind=AuditKind.ITEM_FIXED,
            summary=f"Fixed item {item.external_id} (revision {item.revision}): "
            f"{', '.join(changed)} changed" + (f". {note}" if note.strip() else ""),
            changes={
                "item": item.external_id,
                "revision": item.revision,
                "note": note,
                **{name: {"before": before[name], "after": after[name]} for name in changed},
            },
        )
    return ItemFix(
        item_id=item.pk, revision=item.revision, earlier_answers=earlier, changed_fields=changed
    )


def _prepared_for(item: Item, task_type, config: dict, record: dict[str, Any]):
    try:
        prepared = prepare_record(task_type=task_type, config=config, record=record)
    except PayloadError as exc:
        where = f"field {exc.field!r}: " if exc.field else ""
        raise Refusal(
            f"The record is refused: {where}{exc.message}",
            field=f"record.{exc.field}" if exc.field else "record",
        ) from None
    match = [p for p in prepared if p.external_id == item.external_id]
    if not match:
        made = ", ".join(repr(p.external_id) for p in prepared[:3]) or "no item"
        raise Refusal(
            f"The record makes {made}, not this item ({item.external_id!r}): a fix keeps the "
            "item's id.",
            field="record",
        )
    if match[0].kind != item.kind:
        raise Refusal(
            f"The record makes a {match[0].kind} item; this one is {item.kind} "
            "(a fix keeps the item's kind).",
            field="record",
        )
    return match[0]
