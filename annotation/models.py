"""Items, the work assigned on them, and the answers annotators give.

Rules the services rely on:
- ``Item.assigned_count`` counts live assignments (reserved and not yet reclaimed, or submitted).
  It changes only inside a transaction that holds the item's row lock, which is what makes
  "exactly N distinct annotators per item" safe under concurrent requests.
- ``Annotation`` rows are versions: a revision adds a row and flips ``is_current``; nothing is
  overwritten. A partial unique constraint keeps one current version per assignment.
- Control and qualification items never count toward ``assigned_count``: every annotator may get
  them (once each), so there is no place to take.
- ``Item.is_full`` is true for a regular item whose ``assigned_count`` reached the project's
  ``annotators_per_item``. The database keeps it (triggers, ``annotation.open_queue``) whatever
  writes the count or changes N, and the free-item lookup reads only the partial indexes over
  items that are not full, so handing out the next item never walks full ones.
- ``ProjectItemCounts`` and ``ProjectAnswerCounts`` hold a project's item and submitted-answer
  counts (complete items, answer versions, and revision numbers that move with every change a
  report reads), ``AnnotatorAnswerCounts`` each annotator's submitted count, and
  ``Item.submitted_count`` an item's: all kept by triggers in the same transaction as the write
  (imports, submits, expiry); ``manage.py recount`` rebuilds them. Item and answer counters are
  two rows so that a long import never makes a submit wait for the counter row.
- A ``Batch`` is a unit of work (a HIT) reserved and finished together; its assignments share its
  deadline. An annotator has at most one open batch per project.
"""

import secrets
import uuid
from datetime import UTC, datetime

from django.conf import settings
from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.dateparse import parse_datetime

SHUFFLE_KEYS = 2**31


def new_shuffle_key() -> int:
    """An item's place in the random order (uniform in [0, 2^31))."""
    return secrets.randbelow(SHUFFLE_KEYS)


class Item(models.Model):
    class Kind(models.TextChoices):
        REGULAR = "regular", "Regular"
        CONTROL = "control", "Control"
        QUALIFICATION = "qualification", "Qualification"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=255)
    payload = models.JSONField(help_text="The record as imported (validated by the task type).")
    prepared = models.JSONField(
        default=dict, help_text="Derived once at import (sentences, masked explanation…)."
    )
    gold = models.JSONField(null=True, blank=True, help_text="Never sent to annotators.")
    kind = models.CharField(max_length=14, choices=Kind.choices, default=Kind.REGULAR)
    group = models.CharField(max_length=200, blank=True, default="")
    position = models.PositiveIntegerField(default=0, help_text="Queue order within the project.")
    assigned_count = models.PositiveSmallIntegerField(default=0, editable=False)
    is_full = models.BooleanField(
        default=False,
        editable=False,
        help_text="A regular item with annotators_per_item live assignments (kept by the database).",
    )
    submitted_count = models.PositiveIntegerField(
        default=0,
        db_default=0,
        editable=False,
        help_text="Submitted assignments of this item (kept by the database).",
    )
    shuffle_key = models.IntegerField(
        default=new_shuffle_key,
        db_default=0,
        editable=False,
        help_text="A random number drawn at import: the random item order walks the items by "
        "it from each annotator's own starting point and direction (annotation.ordering).",
    )
    sampling_weight = models.FloatField(
        null=True,
        blank=True,
        editable=False,
        help_text="Active sampling (crowd assignment_strategy active): the item's weight from "
        "the judges' uncertainty, mixed with a uniform floor (metrics.active_sampling); empty "
        "until the weights are computed.",
    )
    sampling_priority = models.FloatField(
        default=0.0,
        db_default=0.0,
        editable=False,
        help_text="Active sampling: weight / U with U drawn from the shuffle key; items are "
        "dealt highest first and the estimate's inclusion probabilities come from it (0: none).",
    )
    revision = models.PositiveIntegerField(
        default=1,
        db_default=1,
        editable=False,
        help_text="Moves when a researcher fixes the item's record (studies.services.item_fix); "
        "every answer records the revision it was made on.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="item_unique_external_id"
            )
        ]
        indexes = [
            models.Index(fields=["project", "kind", "position"], name="item_queue_idx"),
            # The open queue: the free-item lookup in queue order ("first") and "fill the least
            # annotated first" reads only items that still have room.
            models.Index(
                fields=["project", "kind", "position", "id"],
                condition=Q(is_full=False),
                name="item_open_queue_idx",
            ),
            models.Index(
                fields=["project", "kind", "assigned_count", "position", "id"],
                condition=Q(is_full=False),
                name="item_open_least_idx",
            ),
            # The random order: each annotator reads it from their own key, up or down.
            models.Index(
                fields=["project", "kind", "shuffle_key", "id"],
                condition=Q(is_full=False),
                name="item_open_shuffle_idx",
            ),
            # Exports read a project's items in this order beside its answers: walked in order,
            # not sorted with their JSON (a 100k export's sort spilled 69 MB to disk and held
            # back its first row by about a second).
            models.Index(fields=["project", "position", "id"], name="item_export_order_idx"),
            # Item groups: the judges page's list of groups (a skip scan, one probe per group:
            # ``annotation.selectors.item_groups``) and the item browser's group filter in queue
            # order.
            models.Index(
                fields=["project", "group", "position", "id"], name="item_group_order_idx"
            ),
            # The item browser's open items (none assigned, none answered) in queue order; a
            # partial index, so an item leaves it with its first assignment and a write to an
            # item that is not open never touches it.
            models.Index(
                fields=["project", "position", "id"],
                condition=Q(assigned_count=0, submitted_count=0),
                name="item_open_status_idx",
            ),
            # Active sampling: the open items, highest priority first.
            models.Index(
                "project",
                "kind",
                models.F("sampling_priority").desc(),
                "id",
                condition=Q(is_full=False),
                name="item_open_active_idx",
            ),
            # Review walks the items that can be disputed (two or more answers) in queue order.
            models.Index(
                fields=["project", "position", "id"],
                condition=Q(kind="regular", submitted_count__gte=2),
                name="item_reviewable_idx",
            ),
        ]
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.external_id


class ProjectItemCounts(models.Model):
    """How many items a project has (all kinds, and regular ones): what "item k of n" and the
    progress page show, without a COUNT over the project's items. Kept by database triggers on
    every insert, delete or change of kind of an item; ``manage.py recount`` rebuilds it."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    items = models.BigIntegerField(default=0)
    regular_items = models.BigIntegerField(default=0)
    items_revision = models.BigIntegerField(
        default=0,
        db_default=0,
        help_text="Moves on every insert, delete or change of what a report reads of an item "
        "(never on a reservation): part of the agreement report's data version.",
    )

    class Meta:
        verbose_name_plural = "project item counts"

    def __str__(self) -> str:
        return f"{self.regular_items} regular of {self.items} items in project {self.project_id}"


class ProjectAnswerCounts(models.Model):
    """How many of a project's assignments are submitted. Kept by database triggers on every
    insert, delete or change of state of an assignment; ``manage.py recount`` rebuilds it."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    submitted = models.BigIntegerField(default=0)
    complete_items = models.BigIntegerField(
        default=0,
        db_default=0,
        help_text="Regular items with annotators_per_item submitted assignments.",
    )
    annotations = models.BigIntegerField(
        default=0, db_default=0, help_text="Answer versions (all of them)."
    )
    annotations_revision = models.BigIntegerField(
        default=0,
        db_default=0,
        help_text="Moves on every insert, change or delete of an answer version: part of the "
        "agreement report's data version.",
    )

    class Meta:
        verbose_name_plural = "project answer counts"

    def __str__(self) -> str:
        return f"{self.submitted} submitted in project {self.project_id}"


class AnnotatorAnswerCounts(models.Model):
    """How many of a project's assignments one annotator has submitted (the progress page's
    per-annotator column without a COUNT over the project's assignments). Kept by database
    triggers whenever an assignment becomes or stops being submitted; a row appears with the
    annotator's first submitted assignment in the project."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    submitted = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "annotator answer counts"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "annotator"], name="annotator_answer_counts_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.submitted} submitted by {self.annotator_id} in project {self.project_id}"


CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: codes are typed by hand


def new_completion_code() -> str:
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(10))
    return f"{raw[:5]}-{raw[5:]}"


class Batch(models.Model):
    """Items reserved for one annotator as a unit (a HIT): k regular items plus controls in a
    random order, or one qualification round. ``code`` is the completion code shown when it is
    finished. ``external_ref`` ties it to a crowd-platform session (a Prolific session or an MTurk
    assignment), so that one platform session gets exactly one batch."""

    class Kind(models.TextChoices):
        MAIN = "main", "Main items"
        QUALIFICATION = "qualification", "Qualification round"

    class State(models.TextChoices):
        OPEN = "open", "Open"
        FINISHED = "finished", "Finished"
        STOPPED = "stopped", "Stopped by quality control"
        ABANDONED = "abandoned", "Abandoned (expired)"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="batches"
    )
    kind = models.CharField(max_length=14, choices=Kind.choices, default=Kind.MAIN)
    number = models.PositiveIntegerField(help_text="1-based, per annotator, project and kind.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    size = models.PositiveSmallIntegerField(default=0)
    first_sequence = models.PositiveIntegerField(
        default=1, help_text="Sequence of its first assignment; the rest follow without gaps."
    )
    code = models.CharField(max_length=16, unique=True, default=new_completion_code, editable=False)
    external_ref = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "annotator", "kind", "number"], name="batch_unique_number"
            ),
            models.UniqueConstraint(
                fields=["project", "annotator"],
                condition=Q(state="open"),
                name="batch_one_open_per_annotator",
            ),
        ]
        indexes = [
            models.Index(
                fields=["project", "annotator", "kind", "state"], name="batch_annotator_idx"
            ),
            models.Index(fields=["project", "state", "expires_at"], name="batch_expiry_idx"),
        ]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return (
            f"{self.get_kind_display()} batch {self.number} of {self.annotator_id} ({self.state})"
        )


class Assignment(models.Model):
    """One annotator's turn on one item. Unique per (item, annotator): nobody sees an item twice.
    A skipped assignment (``annotation.flags.item_skip``) gave its place back and stays, so the
    item never comes back to that annotator."""

    class State(models.TextChoices):
        RESERVED = "reserved", "Reserved"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired"
        SKIPPED = "skipped", "Skipped"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.RESERVED)
    reserved_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    reopened_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the annotator last opened this submitted assignment to revise it; a "
        "revision's active time counts from here.",
    )
    submitted_revision = models.PositiveIntegerField(
        default=0,
        help_text="The client's draft revision at the last submit; older autosaves are ignored.",
    )
    sequence = models.PositiveIntegerField(
        default=0, help_text="1-based order in which this annotator received items of the project."
    )
    batch = models.ForeignKey(
        Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="assignments"
    )
    correct = models.BooleanField(
        null=True,
        blank=True,
        help_text="For control and qualification items: whether the current answer matches gold "
        "(the task type's score()['correct']). Never shown to the annotator.",
    )
    presentation = models.JSONField(
        default=dict,
        db_default=Value({}, output_field=models.JSONField()),
        blank=True,
        help_text="How the item was laid out for this annotator where that is counterbalanced "
        "(the task type's presentation: which side first, the outputs' order); set when it is "
        "reserved, copied to every answer.",
    )

    # Not a column: True on the instance that the request which reserved it holds
    # (``annotation.services``). Nobody has seen its id yet, so nothing (a draft, an answer, a
    # flag) can name it: the next request's view passes it to ``selectors.assignment_view``,
    # which then reads none of them.
    dealt_now: bool = False

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "annotator"], name="assignment_unique_annotator"
            )
        ]
        indexes = [
            models.Index(fields=["project", "annotator", "state"], name="assignment_annotator_idx"),
            models.Index(fields=["project", "state", "expires_at"], name="assignment_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} → {self.annotator_id} ({self.state})"


class Draft(models.Model):
    """Server-side autosave of unfinished work; ``revision`` only moves forward, so a late,
    older autosave can never overwrite a newer one."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="draft")
    answer = models.JSONField(default=dict)
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"draft of assignment {self.assignment_id} (revision {self.revision})"


class Annotation(models.Model):
    """One submitted version of a human answer."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="annotations")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="annotations")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations"
    )
    answer = models.JSONField()
    version = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    submission_id = models.UUIDField(
        default=uuid.uuid4, help_text="Client key for idempotent submits."
    )
    time_spent_ms = models.PositiveBigIntegerField(
        default=0,
        help_text="Active time on this version as the server counts it: the client's figure, "
        "never more than the time since the assignment was reserved (or reopened to revise it, "
        "or the annotator's previous submit in the project). Quality control, payments and "
        "exports use this.",
    )
    reported_time_ms = models.PositiveBigIntegerField(
        default=0, help_text="Active time on this version as the annotator's browser reported it."
    )
    presentation = models.JSONField(
        default=dict,
        db_default=Value({}, output_field=models.JSONField()),
        blank=True,
        help_text="The assignment's presentation this answer was made in (which side first…).",
    )
    settings_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The project's settings version (guidelines, config, crowd) in force when "
        "this answer was submitted; empty for answers stored before versions were recorded.",
    )
    item_revision = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The item's revision (Item.revision) when this answer was submitted; empty for "
        "answers stored before items had revisions.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment"], condition=Q(is_current=True), name="annotation_one_current"
            ),
            models.UniqueConstraint(
                fields=["assignment", "submission_id"], name="annotation_unique_submission"
            ),
            models.UniqueConstraint(
                fields=["assignment", "version"], name="annotation_unique_version"
            ),
        ]
        indexes = [models.Index(fields=["item", "is_current"], name="annotation_item_idx")]
        ordering = ["assignment_id", "version"]

    def __str__(self) -> str:
        return f"annotation {self.pk} v{self.version}"


class Adjudication(models.Model):
    """A reviewer's final answer for an item where annotators disagree. Versions like
    ``Annotation``: a new decision adds a row and flips ``is_current``."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="adjudications")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    answer = models.JSONField()
    note = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item"], condition=Q(is_current=True), name="adjudication_one_current"
            ),
            models.UniqueConstraint(fields=["item", "version"], name="adjudication_unique_version"),
        ]

    def __str__(self) -> str:
        return f"adjudication of item {self.item_id} v{self.version}"


class ExternalCoder(models.Model):
    """A coder whose annotations were collected elsewhere (the original study of a
    reproduction, an MTurk batch, another tool): not an account, never able to log in. Reports
    and exports show them beside the annotators as ``ext:<name>``."""

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="external_coders"
    )
    name = models.CharField(max_length=100)
    source = models.CharField(
        max_length=200, blank=True, help_text="Where their annotations come from (file, study)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="externalcoder_unique_name")
        ]

    def __str__(self) -> str:
        return f"ext:{self.name}"

    @property
    def coder_id(self) -> str:
        return f"ext:{self.name}"


class ExternalAnnotationQuerySet(models.QuerySet):
    def with_readable_time(self) -> "ExternalAnnotationQuerySet":
        """``annotated_at`` read as text (``annotated_at_text``; :func:`readable_time` turns it
        into a datetime), never as a datetime: a stored value Python cannot hold (year 10000 in
        UTC, accepted before imports bounded dates, or PostgreSQL's ``infinity``) would fail
        the whole export when its row is read."""
        return self.defer("annotated_at").annotate(
            annotated_at_text=Cast("annotated_at", output_field=models.TextField())
        )


def readable_time(text: str | None) -> datetime | None:
    """The datetime of a timestamp read as text (PostgreSQL: ``2024-05-01 12:00:00+00``;
    SQLite: UTC without an offset); None for one Python cannot hold."""
    try:
        value = parse_datetime(text or "")
    except ValueError:  # matches the pattern but is no date (a month 13, a year 0)
        return None
    if value is None:
        return None
    return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)


def readable_isoformat(text: str | None) -> str | None:
    """:func:`readable_time` in ISO 8601, as exports write it (None where it is None)."""
    value = readable_time(text)
    return value.isoformat() if value is not None else None


class ExternalAnnotation(models.Model):
    """An answer an external coder gave an item, in the task type's answer shape (fields the
    source did not record are absent)."""

    coder = models.ForeignKey(ExternalCoder, on_delete=models.CASCADE, related_name="annotations")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="external_annotations")
    answer = models.JSONField()
    time_spent_ms = models.PositiveBigIntegerField(null=True, blank=True)
    annotated_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(
        auto_now=True, help_text="Set on every import, so dashboards see a replaced answer."
    )

    objects = ExternalAnnotationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["coder", "item"], name="externalannotation_unique")
        ]
        indexes = [models.Index(fields=["item"], name="externalannotation_item_idx")]

    def __str__(self) -> str:
        return f"{self.coder} on item {self.item_id}"


class ExternalAnswerCounts(models.Model):
    """How many external coders' answers a project's items have, and a revision that moves with
    every insert, change or delete of one: what the pages' data version reads instead of counting
    them (``agreement.reports.gather.data_version``). Kept by database triggers
    (:mod:`annotation.counter_triggers.external_answers`), whatever path writes (imports,
    bundles, the admin, cascade deletes); a project without a row has none."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    answers = models.BigIntegerField(default=0)
    revision = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "external answer counts"

    def __str__(self) -> str:
        return f"{self.answers} external answers in project {self.project_id} (rev {self.revision})"


class ItemFlag(models.Model):
    """An annotator's report that something is wrong with an item (a reason from the project's
    ``flag_reasons`` crowd setting, and words), possibly with a skip: ``skipped`` says the
    annotator gave the item back (the assignment is then ``skipped``). Researchers answer it
    (``response``), resolve it, or open it again; the item's exclusion from agreement is its own
    record (``ItemExclusion``)."""

    class State(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="flags")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="flags"
    )
    raised_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.CharField(max_length=100, blank=True)
    text = models.TextField(blank=True)
    skipped = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    response = models.TextField(blank=True, help_text="The researchers' answer to the annotator.")
    responded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "state", "created_at"], name="itemflag_project_idx"),
            models.Index(fields=["item", "state"], name="itemflag_item_idx"),
        ]

    def __str__(self) -> str:
        return f"flag {self.pk} on item {self.item_id} ({self.state})"


class ItemExclusion(models.Model):
    """An item researchers left out of agreement (a broken item): the agreement report reads
    items through ``annotation.selectors.agreement_items``, which drops these. Its own table so
    that the item row (and its triggers) is not rebuilt for a column."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="exclusion")
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"item {self.item_id} excluded from agreement"


class ItemComment(models.Model):
    """One message of an item's thread among researchers and reviewers (never shown to
    annotators)."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["item", "created_at"], name="itemcomment_item_idx")]

    def __str__(self) -> str:
        return f"comment {self.pk} on item {self.item_id}"


class SendBack(models.Model):
    """A reviewer sent an annotator's answer back to them with a note: the annotator gets the
    assignment first in their queue (``annotation.flags.sent_back_first``) until they submit it
    again; ``answered_version`` is the answer version that settled it. The earlier versions
    stay (``Annotation`` rows are never overwritten)."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="send_backs")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField()
    version = models.PositiveIntegerField(help_text="The answer version that was sent back.")
    answered_version = models.PositiveIntegerField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment"],
                condition=Q(answered_at__isnull=True),
                name="sendback_one_open",
            )
        ]

    def __str__(self) -> str:
        return f"send-back of assignment {self.assignment_id} v{self.version}"
