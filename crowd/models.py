"""Crowd-platform sessions: who came in through which Prolific or Mechanical Turk link.

A worker account belongs to one platform, project, study and worker id (``crowd.services``); the
worker id as the platform gave it lives here, on the session, for payments."""

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
