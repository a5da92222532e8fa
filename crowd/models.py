"""Crowd-platform sessions: who came in through which Prolific or Mechanical Turk link.

A worker account belongs to one platform, project, study and worker id (``crowd.services``); the
worker id as the platform gave it lives here, on the session, for payments."""

from decimal import Decimal

from django.conf import settings
from django.db import models


class CrowdEntry(models.Model):
    """One platform session of a worker in a project: a Prolific session (``SESSION_ID``) or an
    MTurk assignment (``assignmentId``). Each gets exactly one main batch, found through
    ``Batch.external_ref == batch_ref``.

    An account has at most one open session per project: opening a new one (MTurk: another HIT)
    closes the others (``closed_at``) and logs their browsers out. A crowd login reaches only
    the work of the account's open session (``crowd.selectors.in_current_session``)."""

    class Platform(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Mechanical Turk"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_entries"
    )
    platform = models.CharField(max_length=10, choices=Platform.choices)
    worker_id = models.CharField(max_length=64, help_text="PROLIFIC_PID or MTurk workerId.")
    study_id = models.CharField(
        max_length=64, help_text="Prolific STUDY_ID, or the study label of an MTurk link."
    )
    session_id = models.CharField(
        max_length=64, help_text="Prolific SESSION_ID or MTurk assignmentId."
    )
    hit_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)
    closed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a newer session of the same account replaced this one (then it reaches "
        "nothing and cannot be entered again).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "platform", "session_id"], name="crowd_entry_unique_session"
            )
        ]
        indexes = [
            models.Index(
                fields=["project", "platform", "worker_id"], name="crowd_entry_worker_idx"
            ),
            models.Index(fields=["user", "project", "closed_at"], name="crowd_entry_user_open_idx"),
        ]
        verbose_name_plural = "crowd entries"

    def __str__(self) -> str:
        return f"{self.platform} {self.worker_id} in {self.project_id}"

    @property
    def batch_ref(self) -> str:
        return f"{self.platform}:{self.session_id}"


class PlatformAction(models.Model):
    """One action on one platform session, sent (or to be sent) to Prolific or MTurk: the ledger
    that keeps these actions idempotent (``crowd.actions``).

    One row per (project, platform, session, kind): a row is written, in its own transaction,
    before anything is sent; a second request for a session that has one is not sent again.
    ``state``: ``pending`` (recorded, not sent yet), ``unknown`` (sent, or being sent, without a
    definite answer: a timeout, a 5xx, a worker that died), ``sent`` (the platform accepted it),
    ``failed`` (the platform refused it; sending again is allowed). A Prolific bonus left
    ``unknown`` is never sent again by Concord (Prolific's bulk-bonus payment is not idempotent):
    the researcher checks on Prolific and records the outcome (``crowd_actions --reconcile``)."""

    class Kind(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        RETURN = "return", "Request return"
        BONUS = "bonus", "Bonus"

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        UNKNOWN = "unknown", "Unknown: check on the platform"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    entry = models.ForeignKey(CrowdEntry, on_delete=models.CASCADE, related_name="actions")
    platform = models.CharField(max_length=10, choices=CrowdEntry.Platform.choices)
    session_id = models.CharField(
        max_length=64, help_text="Prolific submission id or MTurk assignment id."
    )
    worker_id = models.CharField(max_length=64)
    study_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    amount_minor = models.PositiveIntegerField(
        default=0, help_text="Bonus in minor units (pence, cents) of ``currency``."
    )
    currency = models.CharField(max_length=3, blank=True, default="")
    reason_code = models.CharField(
        max_length=32, blank=True, default="", help_text="Prolific's rejection category."
    )
    message = models.TextField(blank=True, default="")
    request_id = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="Prolific's bulk bonus payment id, or MTurk's UniqueRequestToken.",
    )
    attempts = models.PositiveIntegerField(default=0)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    outcome = models.CharField(
        max_length=300, blank=True, default="", help_text="A short, safe summary of the answer."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "platform", "session_id", "kind"],
                name="crowd_action_once_per_session",
            )
        ]
        indexes = [models.Index(fields=["project", "state"], name="crowd_action_state_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.platform} {self.session_id} ({self.state})"

    @property
    def amount(self) -> Decimal:
        """The bonus in ``currency`` (two decimals)."""
        return (Decimal(self.amount_minor) / 100).quantize(Decimal("0.01"))


class QualityFigures(models.Model):
    """The quality page's per-annotator answer figures (answers, mean active time, fast answers)
    of one project, and the data version they were computed from (``crowd.quality_figures``):
    they read every answer, so the page reads them here instead, computed again when the data
    moved (inline on a small project, else on the worker while the page marks them out of date).
    """

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    version = models.CharField(max_length=64, blank=True, help_text="The data version read.")
    figures = models.JSONField(
        default=dict, blank=True, help_text="{annotator id: {n, mean_ms, fast}}"
    )
    computed_at = models.DateTimeField(null=True, blank=True)
    refreshing_since = models.DateTimeField(
        null=True, blank=True, help_text="A refresh was queued or started then (none: idle)."
    )
    error = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "quality figures"

    def __str__(self) -> str:
        return f"quality figures of project {self.project_id}"
