"""Flags, skips, comments and send-backs: what annotators and reviewers say about an item.

- An annotator flags an item of their own assignment with a reason from the project's
  ``flag_reasons`` crowd setting (``projects.crowd``) and words ("other" needs words); the draft
  is left as it is. Where the project allows it (``allow_skip``), they may skip the item, with or
  without a flag: the assignment becomes ``skipped``, its place goes back to the pool (so N
  annotators per item still hold), and the item never comes back to them (the assignment stays:
  one per item and annotator). A skip is recorded as a flag with ``skipped`` set.
- Researchers answer a flag, resolve it, leave the item out of agreement (``ItemExclusion``;
  the agreement report reads items through :func:`agreement_items`) or take it back in, and
  re-open a fixed item: the annotators who skipped it may get it again.
- Researchers and reviewers keep a comment thread per item.
- A reviewer sends an answer back to its annotator with a note (``SendBack``): it is the first
  thing the annotator's queue gives them (``services.assignment_next``) until they submit it again,
  which adds an answer version (the earlier ones stay).

Every function takes objects the caller has already scoped to a project the user may act in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from annotation import quality
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemComment,
    ItemExclusion,
    ItemFlag,
    SendBack,
)
from annotation.references import item_reference
from annotation.services import WorkflowError, _check_may_write
from projects.crowd import crowd_settings
from projects.models import Membership, Project
from webhooks import events as webhook_events
from webhooks.services import event_emit

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MAX_TEXT = 2000
MAX_COMMENT = 5000
OTHER = "other"
FLAG_ACTIONS = ("answer", "resolve", "exclude", "include", "reopen_item")


class FlagRefused(WorkflowError):
    """A flag, skip, comment or send-back the rules refuse (``core.errors`` maps the code)."""


def _bounded(text: str, *, field: str, limit: int = MAX_TEXT) -> str:
    text = (text or "").strip()
    if len(text) > limit:
        raise FlagRefused(
            gettext("%(field)s is longer than %(limit)d characters.")
            % {"field": field, "limit": limit},
            field=field,
        )
    return text


# --- annotators: flag and skip -----------------------------------------------------------------


def _checked_reason(project: Project, reason: str, text: str, *, skip: bool) -> tuple[str, str]:
    reasons = crowd_settings(project).flag_reasons
    reason = (reason or "").strip()
    text = _bounded(text, field="text")
    if not reason and not skip:
        raise FlagRefused(gettext("Choose a reason for the flag."), field="reason")
    if reason and reason not in reasons:
        known = ", ".join(reasons)
        raise FlagRefused(
            gettext("Unknown reason; this project's reasons are: %(known)s.") % {"known": known},
            field="reason",
        )
    if reason == OTHER and not text:
        raise FlagRefused(
            gettext("Say in a few words what is wrong (reason: other)."), field="text"
        )
    return reason, text


def flag_raise(
    *, assignment: Assignment, reason: str, text: str = "", skip: bool = False
) -> ItemFlag:
    """Record the annotator's flag on their assignment's item (and, with ``skip``, skip it).
    The assignment's draft is not touched."""
    project = assignment.project
    reason, text = _checked_reason(project, reason, text, skip=skip)
    _check_may_write(assignment)
    with transaction.atomic():
        locked = Assignment.objects.select_for_update(of=("self",)).get(pk=assignment.pk)
        if skip:
            _skip_locked(project, locked)
        elif ItemFlag.objects.filter(
            assignment=locked, skipped=False, state=ItemFlag.State.OPEN
        ).exists():
            raise FlagRefused(
                gettext(
                    "You have flagged this item already; the researchers have not answered yet."
                ),
                field="reason",
                code="conflict",
            )
        flag = ItemFlag.objects.create(
            project=project,
            item_id=locked.item_id,
            assignment=locked,
            raised_by_id=locked.annotator_id,
            reason=reason,
            text=text,
            skipped=skip,
        )
        event_emit(
            project_id=project.id,
            event=webhook_events.FLAG_RAISED,
            data=lambda: _flag_event(flag.pk),
        )
    assignment.state = locked.state
    return flag


def item_skip(*, assignment: Assignment, reason: str = "", text: str = "") -> ItemFlag:
    """Skip the assignment's item (only where the project's ``allow_skip`` is on); a reason is
    optional. Recorded as a flag with ``skipped``."""
    return flag_raise(assignment=assignment, reason=reason, text=text, skip=True)


def _skip_locked(project: Project, locked: Assignment) -> None:
    crowd = crowd_settings(project)
    if not crowd.allow_skip:
        raise FlagRefused(gettext("This project does not allow skipping items."), field="skip")
    if locked.batch_id is not None:
        raise FlagRefused(
            gettext("Items of a batch cannot be skipped."), field="skip", code="conflict"
        )
    if locked.state not in (Assignment.State.RESERVED, Assignment.State.EXPIRED):
        raise FlagRefused(
            gettext("Only an item you have not submitted can be skipped."),
            field="skip",
            code="conflict",
        )
    if locked.state == Assignment.State.RESERVED:  # an expired one gave its place back already
        quality._give_places_back([locked.item_id] if _is_regular(locked.item_id) else [])
    Assignment.objects.filter(pk=locked.pk).update(state=Assignment.State.SKIPPED)
    locked.state = Assignment.State.SKIPPED


def _is_regular(item_id: int) -> bool:
    return Item.objects.filter(pk=item_id, kind=Item.Kind.REGULAR).exists()


def _pseudonym(project_id: int, user_id: int | None) -> str:
    if user_id is None:
        return ""
    return (
        Membership.objects.filter(project_id=project_id, user_id=user_id)
        .values_list("pseudonym", flat=True)
        .first()
        or ""
    )


def _flag_event(flag_id: int) -> dict | None:
    """What ``flag.raised`` says: the flag, its item and the annotator's pseudonym."""
    flag = ItemFlag.objects.select_related("item").filter(pk=flag_id).first()
    if flag is None:
        return None
    return {
        "flag": flag.pk,
        "item": flag.item_id,
        "item_external_id": flag.item.external_id,
        "annotator": _pseudonym(flag.project_id, flag.raised_by_id),
        "reason": flag.reason,
        "text": flag.text,
        "skipped": flag.skipped,
        "raised_at": flag.created_at.isoformat(),
    }


# --- researchers: act on a flag ----------------------------------------------------------------


def flag_act(*, flag: ItemFlag, user: User, action: str, response: str = "") -> ItemFlag:
    """A researcher's action on a flag: ``answer`` (words to the annotator), ``resolve``,
    ``exclude`` / ``include`` (the item out of / back into agreement; resolves the flag),
    ``reopen_item`` (the item was fixed: those who skipped it may get it again; resolves)."""
    if action not in FLAG_ACTIONS:
        raise FlagRefused(f"Unknown action; use one of {', '.join(FLAG_ACTIONS)}.", field="action")
    response = _bounded(response, field="response")
    if action == "answer" and not response:
        raise FlagRefused("Write the answer.", field="response")
    with transaction.atomic():
        flag = ItemFlag.objects.select_for_update().get(pk=flag.pk)
        if response:
            flag.response, flag.responded_by = response, user
        if action == "exclude":
            item_exclude(item=flag.item, user=user, excluded=True, note=response)
        elif action == "include":
            item_exclude(item=flag.item, user=user, excluded=False)
        elif action == "reopen_item":
            item_reopen(item=flag.item)
        if action != "answer":
            flag.state, flag.resolved_at = ItemFlag.State.RESOLVED, timezone.now()
        flag.save(update_fields=["response", "responded_by", "state", "resolved_at", "updated_at"])
    return flag


def item_exclude(*, item: Item, user: User, excluded: bool, note: str = "") -> bool:
    """Leave ``item`` out of agreement (or take it back in); returns whether anything changed.
    The item's ``updated_at`` moves, which moves the report's data version (the database's
    ``items_revision``), so a cached report is computed again."""
    with transaction.atomic():
        if excluded:
            _, changed = ItemExclusion.objects.get_or_create(
                item=item, defaults={"excluded_by": user, "note": _bounded(note, field="note")}
            )
        else:
            changed = ItemExclusion.objects.filter(item=item).delete()[0] > 0
        if changed:
            Item.objects.filter(pk=item.pk).update(updated_at=timezone.now())
    return bool(changed)


def item_reopen(*, item: Item) -> int:
    """The item was fixed: the annotators who skipped it may be given it again (their skipped
    assignments go; the flags that recorded the skips stay). Returns how many."""
    return Assignment.objects.filter(item=item, state=Assignment.State.SKIPPED).delete()[0]


# --- researchers and reviewers: comments ------------------------------------------------------


def comment_add(*, item: Item, author: User, body: str) -> ItemComment:
    body = _bounded(body, field="body", limit=MAX_COMMENT)
    if not body:
        raise FlagRefused("Write the comment.", field="body")
    return ItemComment.objects.create(item=item, author=author, body=body)


# --- reviewers: send an answer back -----------------------------------------------------------


def send_back(*, project: Project, annotation_id: int, reviewer: User, note: str) -> SendBack:
    """Send the current answer ``annotation_id`` (of ``project``) back to its annotator with
    ``note``. Refused for an older version, and while an earlier send-back is still open."""
    note = _bounded(note, field="note")
    if not note:
        raise FlagRefused("Write a note for the annotator.", field="note")
    annotation = (
        Annotation.objects.select_related("assignment")
        .filter(pk=annotation_id, item__project=project)
        .first()
    )
    if annotation is None:
        raise FlagRefused("No such answer in this project.", field="annotation", code="not_found")
    if not annotation.is_current:
        raise FlagRefused(
            "A newer version of this answer exists.", field="annotation", code="conflict"
        )
    with transaction.atomic():
        Assignment.objects.select_for_update().filter(pk=annotation.assignment_id).first()
        if SendBack.objects.filter(
            assignment_id=annotation.assignment_id, answered_at__isnull=True
        ).exists():
            raise FlagRefused(
                "This answer was already sent back and is not answered yet.",
                field="annotation",
                code="conflict",
            )
        return SendBack.objects.create(
            assignment_id=annotation.assignment_id,
            reviewer=reviewer,
            note=note,
            version=annotation.version,
        )


# --- reads ------------------------------------------------------------------------------------


def agreement_items(*, project: Project) -> QuerySet[Item]:
    """The items agreement figures are computed over: the project's regular items that
    researchers did not leave out (``ItemExclusion``). The one place that decides it."""
    return Item.objects.filter(project=project, kind=Item.Kind.REGULAR).filter(
        exclusion__isnull=True
    )


@dataclass(frozen=True)
class FlagView:
    id: int
    reason: str
    text: str
    skipped: bool
    state: str
    annotator: str
    response: str
    created_at: str
    resolved_at: str | None


def item_flags(*, item: Item) -> list[FlagView]:
    """An item's flags, newest first, with the annotators' pseudonyms (two queries)."""
    names = dict(
        Membership.objects.filter(project_id=item.project_id).values_list("user_id", "pseudonym")
    )
    return [
        FlagView(
            id=f.pk,
            reason=f.reason,
            text=f.text,
            skipped=f.skipped,
            state=f.state,
            annotator=names.get(f.raised_by_id, ""),
            response=f.response,
            created_at=f.created_at.isoformat(),
            resolved_at=f.resolved_at.isoformat() if f.resolved_at else None,
        )
        for f in ItemFlag.objects.filter(item=item).order_by("-created_at", "-id")
    ]


MAX_LISTED = 1000


@dataclass(frozen=True)
class FlagPage:
    results: list[dict]
    next_before: int | None  # the ``before`` of the next (older) page; None: this is the last


def project_flags(
    *, project: Project, state: str = "", before: int | None = None, size: int | None = None
) -> FlagPage:
    """One page of the project's flags, newest first (``size`` of them, older than the flag id
    ``before``), with their items and the annotators' pseudonyms (two queries)."""
    size = size or MAX_LISTED
    names = dict(Membership.objects.filter(project=project).values_list("user_id", "pseudonym"))
    rows = ItemFlag.objects.filter(project=project)
    if state:
        rows = rows.filter(state=state)
    if before is not None:
        rows = rows.filter(id__lt=before)
    listed = _flag_rows(rows, names, size + 1)
    more = len(listed) > size
    listed = listed[:size]
    return FlagPage(results=listed, next_before=listed[-1]["id"] if more else None)


def _flag_rows(rows: QuerySet[ItemFlag], names: dict, limit: int) -> list[dict]:
    return [
        {
            "id": f["id"],
            "item": f["item_id"],
            "item_external_id": f["item__external_id"],
            "reference": item_reference(item_id=f["item_id"]),
            "annotator": names.get(f["raised_by_id"], ""),
            "reason": f["reason"],
            "text": f["text"],
            "skipped": f["skipped"],
            "state": f["state"],
            "response": f["response"],
            "created_at": f["created_at"].isoformat(),
        }
        for f in rows.order_by("-id").values(
            "id",
            "item_id",
            "item__external_id",
            "raised_by_id",
            "reason",
            "text",
            "skipped",
            "state",
            "response",
            "created_at",
        )[:limit]
    ]


class CommentView(TypedDict):
    id: int
    author: str  # username; "" for a removed account
    body: str
    created_at: str  # ISO 8601


class ItemDiscussion(TypedDict):
    item_id: int
    flags: list[FlagView]
    comments: list[CommentView]
    excluded: bool  # left out of agreement
    sent_back: int  # answers sent back and not yet answered


class FlagSummary(TypedDict):
    open: int  # open flags (a skip given no reason is no flag to answer)
    skipped: int
    items: int  # items with an open flag
    excluded: int  # items left out of agreement
    sent_back: int  # answers sent back and waiting


def item_comments(*, item: Item) -> list[CommentView]:
    return [
        {
            "id": c.pk,
            "author": c.author.username if c.author else "",
            "body": c.body,
            "created_at": c.created_at.isoformat(),
        }
        for c in ItemComment.objects.filter(item=item).select_related("author")
    ]


def item_discussion(*, item: Item) -> ItemDiscussion:
    """What the item page shows of an item's flags and thread: its flags, its comments,
    whether it is left out of agreement, and its answers sent back and not yet answered."""
    return {
        "item_id": item.pk,
        "flags": item_flags(item=item),
        "comments": item_comments(item=item),
        "excluded": ItemExclusion.objects.filter(item=item).exists(),
        "sent_back": SendBack.objects.filter(
            assignment__item=item, answered_at__isnull=True
        ).count(),
    }


def flag_summary(*, project: Project) -> FlagSummary:
    """Open flags, skips and excluded items of a project, for its page (one query each). A skip
    given no reason is counted as a skip only, not as an open flag (nothing to answer)."""
    raised = Q(state=ItemFlag.State.OPEN) & ~Q(skipped=True, reason="")
    counted = ItemFlag.objects.filter(project=project).aggregate(
        n_open=Count("id", filter=raised),
        n_skipped=Count("id", filter=Q(skipped=True)),
        n_items=Count("item", distinct=True, filter=raised),
    )
    return FlagSummary(
        open=counted["n_open"],
        skipped=counted["n_skipped"],
        items=counted["n_items"],
        excluded=ItemExclusion.objects.filter(item__project=project).count(),
        sent_back=SendBack.objects.filter(
            assignment__project=project, answered_at__isnull=True
        ).count(),
    )


def flag_for(*, project: Project, flag_id: int) -> ItemFlag:
    """A flag of ``project`` (404-like refusal for any other project's)."""
    flag = ItemFlag.objects.select_related("item").filter(project=project, pk=flag_id).first()
    if flag is None:
        raise FlagRefused("No such flag.", code="not_found")
    return flag


def project_item(*, project: Project, item_id: int) -> Item:
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None:
        raise FlagRefused("No such item.", code="not_found")
    return item


__all__ = [
    "FLAG_ACTIONS",
    "FlagRefused",
    "agreement_items",
    "comment_add",
    "flag_act",
    "flag_for",
    "flag_raise",
    "flag_summary",
    "item_comments",
    "item_discussion",
    "item_exclude",
    "item_flags",
    "item_reopen",
    "item_skip",
    "project_flags",
    "send_back",
]
