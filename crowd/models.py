"""Crowd-platform sessions: who came in through which Prolific or Mechanical Turk link."""

from django.conf import settings
from django.db import models


class CrowdEntry(models.Model):
    """One platform session of a worker in a project: a Prolific session (``SESSION_ID``) or an
    MTurk assignment (``assignmentId``). Each gets exactly one main batch, found through
    ``Batch.external_ref == batch_ref``."""

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
    session_id = models.CharField(max_length=64, help_text="Prolific SESSION_ID or MTurk assignmentId.")
    hit_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "platform", "session_id"], name="crowd_entry_unique_session"
            )
        ]
        indexes = [
            models.Index(fields=["project", "platform", "worker_id"], name="crowd_entry_worker_idx")
        ]
        verbose_name_plural = "crowd entries"

    def __str__(self) -> str:
        return f"{self.platform} {self.worker_id} in {self.project_id}"

    @property
    def batch_ref(self) -> str:
        return f"{self.platform}:{self.session_id}"
