"""Webhook reads: a project's subscriptions and its delivery log."""

from __future__ import annotations

from typing import Any, TypedDict

from django.db.models import QuerySet

from projects.models import Project
from webhooks.models import Delivery, Subscription


class SubscriptionView(TypedDict):
    id: int
    url: str
    events: list[str]
    description: str
    is_active: bool
    secret: str
    created_at: str


class DeliveryView(TypedDict):
    id: int
    subscription: int
    url: str
    event: str
    event_id: str
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str
    next_attempt_at: str | None
    delivered_at: str | None
    created_at: str


def subscriptions_of(*, project: Project) -> QuerySet[Subscription]:
    return Subscription.objects.filter(project=project).order_by("id")


def subscription_of(*, project: Project, subscription_id: int) -> Subscription | None:
    return Subscription.objects.filter(project=project, pk=subscription_id).first()


def subscription_view(*, subscription: Subscription) -> SubscriptionView:
    return {
        "id": subscription.id,
        "url": subscription.url,
        "events": list(subscription.events),
        "description": subscription.description,
        "is_active": subscription.is_active,
        "secret": subscription.secret,
        "created_at": subscription.created_at.isoformat(),
    }


def deliveries_of(*, project: Project, status: str = "") -> QuerySet[Delivery]:
    rows = Delivery.objects.filter(subscription__project=project).select_related("subscription")
    if status:
        rows = rows.filter(status=status)
    return rows.defer("payload").order_by("-id")


def delivery_of(*, project: Project, delivery_id: int) -> Delivery | None:
    return (
        Delivery.objects.filter(subscription__project=project, pk=delivery_id)
        .select_related("subscription")
        .first()
    )


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def delivery_view(*, delivery: Delivery) -> DeliveryView:
    return {
        "id": delivery.id,
        "subscription": delivery.subscription_id,
        "url": delivery.subscription.url,
        "event": delivery.event,
        "event_id": str(delivery.event_id),
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "next_attempt_at": _iso(delivery.next_attempt_at),
        "delivered_at": _iso(delivery.delivered_at),
        "created_at": delivery.created_at.isoformat(),
    }
