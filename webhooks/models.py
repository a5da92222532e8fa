"""A project's webhook subscriptions and the log of their deliveries."""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class Subscription(models.Model):
    """Send the project's ``events`` to ``url``, signed with ``secret`` (researchers'; the worker
    refuses private addresses unless staff listed the host, ``CONCORD_WEBHOOK_PRIVATE_HOSTS``)."""

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="webhook_subscriptions"
    )
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list, help_text="Event names (webhooks.events.EVENTS).")
    secret = models.CharField(max_length=100, default=new_secret)
    description = models.CharField(max_length=200, blank=True, default="")
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["project", "is_active"], name="webhook_sub_project_idx")]

    def __str__(self) -> str:
        return f"webhook {self.url} of {self.project_id}"


class Delivery(models.Model):
    """One event sent (or to be sent) to one subscription: its payload, attempts and outcome.
    ``event_id`` is the payload's ``id``: the same on every attempt and redelivery, so a
    receiver drops repeats by it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        RETRYING = "retrying", "Waiting to retry"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    subscription = models.ForeignKey(
        Subscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=40)
    event_id = models.UUIDField(default=uuid.uuid4)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    give_up_after = models.PositiveIntegerField(
        default=8, help_text="Failed once attempts reach this (a redelivery raises it)."
    )
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One delivery per event and subscription (item.complete has a fixed id per item).
            models.UniqueConstraint(
                fields=["subscription", "event_id"], name="webhook_delivery_once"
            ),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_due_idx")]

    def __str__(self) -> str:
        return f"{self.event} {self.event_id} → {self.subscription_id} ({self.status})"
