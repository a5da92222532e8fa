"""Cached agreement reports.

An ``AgreementSnapshot`` is one report of one project for one choice of coders and options
(``filter_key``) at one data version (``key``): the dashboard's report, or (``kind``) the judge
validation page's figures for one subset, whose filter keys never meet the reports'. Two
constraints carry the caching rules:

* ``(project, key)`` is unique: a report is computed once per data version and choice;
* at most one snapshot per ``(project, filter_key)`` is pending or running (a partial unique
  constraint), so a second request while a computation is under way — even one that sees newer
  data — joins it instead of starting a duplicate. The database enforces this across web
  processes and workers, on PostgreSQL and SQLite alike.
"""

from django.db import models
from django.db.models import Q


class AgreementSnapshot(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Kind(models.TextChoices):
        REPORT = "report", "Agreement report (the dashboard)"
        JUDGE_VALIDATION = "judge_validation", "Judges against the humans"

    ACTIVE = (Status.PENDING, Status.RUNNING)

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="agreement_snapshots"
    )
    kind = models.CharField(
        max_length=20,
        choices=Kind.choices,
        default=Kind.REPORT,
        db_default=Kind.REPORT,
        help_text="What was computed: the dashboard's report, or the judge validation page's "
        "figures (with the pilots of its labels-needed projection).",
    )
    filter_key = models.CharField(
        max_length=64, help_text="Digest of the kind, coder filter and options."
    )
    key = models.CharField(max_length=64, help_text="Digest of filter_key and data version.")
    annotator_filter = models.JSONField(default=dict)
    options = models.JSONField(default=dict)
    data_version = models.JSONField(default=dict)
    answers = models.PositiveIntegerField(default=0, help_text="Annotation rows when requested.")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(null=True, blank=True)
    page = models.JSONField(
        null=True,
        blank=True,
        help_text="What the dashboard shows of the result, rendered with it "
        "(agreement.reports.page).",
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "key"], name="agreement_snapshot_unique_key"
            ),
            models.UniqueConstraint(
                fields=["project", "filter_key"],
                condition=Q(status__in=["pending", "running"]),
                name="agreement_snapshot_one_active",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "filter_key", "status"], name="agreement_snapshot_idx")
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"agreement snapshot {self.pk} of project {self.project_id} ({self.status})"

    @property
    def duration_s(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    @property
    def never_queued(self) -> bool:
        """Failed before any worker started it: its task could not be queued (the broker was
        down). A computation that fails always has ``started_at`` (set when a worker claims it)."""
        return self.status == self.Status.FAILED and self.started_at is None
