"""Webhook writes: subscriptions, events recorded as deliveries, and delivery attempts.

``event_emit`` is what other apps call. It does nothing in the caller's transaction: after it
commits, one query finds the project's active subscriptions to the event; only if there are
any is the payload built, a ``Delivery`` recorded per subscription and handed to Celery. The
worker (``delivery_attempt``) makes one signed POST per attempt, to an address that passes the
same checks as judges' model endpoints (``core.destinations``), records the outcome (status
code, a bounded and sanitised excerpt of an error body) and schedules the next attempt with
exponential backoff. A receiver that is down, slow or failing therefore never slows or blocks
the request that caused the event.
"""

from __future__ import annotations

import functools
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.background import in_background
from core.destinations import DestinationRefused, checked_http_client, url_check
from core.errors import Refusal
from projects.models import Project
from webhooks import events as event_names
from webhooks import signing
from webhooks.models import Delivery, Subscription

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

SUBJECT = "The webhook's host"
REMEDY = (
    "only staff can allow webhooks to reach such hosts (the host listed in "
    "CONCORD_WEBHOOK_PRIVATE_HOSTS)."
)
EXCERPT_CHARS = 200  # of a receiver's error body, in the log
READ_BYTES = 2048  # of a receiver's answer, at most
MAX_BACKOFF_S = 3600


class WebhookRefused(Refusal):
    """A subscription or redelivery the service refuses."""


# --- subscriptions ----------------------------------------------------------------------------


def _clean_events(events: Any) -> list[str]:
    if not isinstance(events, list | tuple) or not events:
        raise WebhookRefused("Choose at least one event.", field="events")
    unknown = [e for e in events if e not in event_names.EVENTS]
    if unknown:
        raise WebhookRefused(
            f"Unknown event {unknown[0]!r}; choose among {', '.join(event_names.EVENTS)}.",
            field="events",
        )
    return [e for e in event_names.EVENTS if e in events]  # the catalogue's order, no repeats


def _clean_url(url: Any) -> str:
    if not isinstance(url, str) or not url.strip():
        raise WebhookRefused("A webhook needs a URL.", field="url")
    url = url.strip()
    if len(url) > 2000:
        raise WebhookRefused("The URL is longer than 2,000 characters.", field="url")
    if re.search(r"[\s\x00-\x1f\x7f]", url):
        raise WebhookRefused("The URL contains spaces or control characters.", field="url")
    try:
        destination_check(url=url)
    except DestinationRefused as exc:
        raise WebhookRefused(str(exc), field="url") from None
    return url


def destination_check(*, url: str) -> None:
    """Refuse (``DestinationRefused``) a URL a webhook may not reach: not http(s), not
    resolving, or resolving to a private, loopback, link-local… address whose host staff did
    not list in ``CONCORD_WEBHOOK_PRIVATE_HOSTS``."""
    url_check(
        url,
        allow_private=False,
        private_hosts=settings.CONCORD_WEBHOOK_PRIVATE_HOSTS,
        subject=SUBJECT,
        remedy=REMEDY,
    )


def subscription_create(
    *,
    project: Project,
    user: User | None,
    url: str,
    events: list[str],
    description: str = "",
    is_active: bool = True,
) -> Subscription:
    """A new subscription with a new secret (shown to the researcher to verify signatures)."""
    return Subscription.objects.create(
        project=project,
        url=_clean_url(url),
        events=_clean_events(events),
        description=(description or "")[:200],
        is_active=bool(is_active),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def subscription_update(
    *,
    subscription: Subscription,
    url: str | None = None,
    events: list[str] | None = None,
    description: str | None = None,
    is_active: bool | None = None,
    new_secret: bool = False,
) -> Subscription:
    """Change what is given; ``new_secret`` replaces the secret (the old one stops at once)."""
    from webhooks.models import new_secret as make_secret

    if url is not None:
        subscription.url = _clean_url(url)
    if events is not None:
        subscription.events = _clean_events(events)
    if description is not None:
        subscription.description = description[:200]
    if is_active is not None:
        subscription.is_active = bool(is_active)
    if new_secret:
        subscription.secret = make_secret()
    subscription.save()
    return subscription


def subscription_delete(*, subscription: Subscription) -> None:
    """Delete the subscription and its delivery log."""
    subscription.delete()


# --- events -----------------------------------------------------------------------------------


EventData = dict[str, Any] | Callable[[], dict[str, Any] | None]


@dataclass(frozen=True)
class Event:
    """One event to announce: its name, its ``data`` (or a function that builds it, called only
    when a subscription wants the event; returning None sends nothing) and, optionally, a fixed
    payload id (``item.complete`` uses one per item, so it is sent once whoever submits)."""

    event: str
    data: EventData
    event_id: uuid.UUID | None = None


def event_emit(
    *, project_id: int, event: str, data: EventData, event_id: uuid.UUID | None = None
) -> None:
    """Announce ``event`` in the project once the current transaction commits (at once outside
    one): :func:`events_emit` with one event."""
    events_emit(project_id=project_id, events=[Event(event=event, data=data, event_id=event_id)])


def events_emit(*, project_id: int, events: list[Event]) -> None:
    """Announce ``events`` of one project once the current transaction commits (at once outside
    one), in their order. One query after the commit reads the project's active subscriptions
    for all of them: a submit announces two events, and every submit of every annotator pays
    for that read (issue 31)."""
    for event in events:
        if event.event not in event_names.EVENTS:
            raise ValueError(f"unknown webhook event {event.event!r}")
    pending = [(e.event, e.data, e.event_id or uuid.uuid4()) for e in events]
    transaction.on_commit(functools.partial(_record_and_send, project_id, pending))


def _record_and_send(project_id: int, events: list[tuple[str, EventData, uuid.UUID]]) -> None:
    # Runs after the caller's commit: whatever happens here, the caller's request is done and
    # must not fail (its work is stored), so every error is logged and swallowed.
    try:
        subscriptions = list(
            Subscription.objects.filter(project_id=project_id, is_active=True).only("id", "events")
        )
    except Exception:
        log.exception("webhook events of project %s were not recorded", project_id)
        return
    slug: list[str | None] = []  # read once, by the first event that is sent
    for event, data, event_id in events:
        wanted = [s for s in subscriptions if event in s.events]
        if wanted:
            _record_event(project_id, wanted, event, data, event_id, slug=slug)


def _record_event(
    project_id: int,
    subscriptions: list[Subscription],
    event: str,
    data: EventData,
    event_id: uuid.UUID,
    *,
    slug: list[str | None],
) -> None:
    """A ``Delivery`` of ``event`` per subscription that wants it, each handed to a worker."""
    try:
        body = data() if callable(data) else data
        if body is None:
            return
        if not slug:
            slug.append(
                Project.objects.filter(pk=project_id).values_list("slug", flat=True).first()
            )
        payload = {
            "id": str(event_id),
            "event": event,
            "created_at": timezone.now().isoformat(),
            "project": slug[0],
            "data": body,
        }
        created = []
        for subscription in subscriptions:
            try:
                with transaction.atomic():
                    delivery = Delivery.objects.create(
                        subscription_id=subscription.id,
                        event=event,
                        event_id=event_id,
                        payload=payload,
                        give_up_after=settings.CONCORD_WEBHOOK_MAX_ATTEMPTS,
                    )
            except IntegrityError:
                continue  # this event was already recorded for this subscription
            created.append(delivery.id)
        for delivery_id in created:
            _send(delivery_id)
    except Exception:
        log.exception("webhook event %s of project %s was not recorded", event, project_id)


def _eager() -> bool:
    from webhooks.celery_tasks import deliver

    return bool(deliver.app.conf.task_always_eager)


def _send(delivery_id: int, *, countdown: float | None = None) -> None:
    """Hand a delivery to a worker (after ``countdown`` seconds). Without a broker (``make
    run``), a first attempt runs on a background thread (core.background) and retries wait for
    the sweep or a redelivery. A broker that refuses leaves the delivery pending for the sweep."""
    from webhooks.celery_tasks import deliver

    if _eager():
        if countdown is None:
            in_background(
                functools.partial(delivery_attempt, delivery_id=delivery_id), name="webhook"
            )
        return
    options: dict[str, Any] = {}
    if settings.CONCORD_WEBHOOK_QUEUE:
        options["queue"] = settings.CONCORD_WEBHOOK_QUEUE
    if countdown:
        options["countdown"] = countdown
    try:
        deliver.apply_async(args=(delivery_id,), **options)
    except Exception as exc:  # broker away: the sweep (webhooks.send_due) sends it later
        log.warning("webhook delivery %s could not be queued: %s", delivery_id, exc)


# --- delivery ---------------------------------------------------------------------------------


def backoff_seconds(*, attempts: int) -> float:
    """Seconds before the attempt after ``attempts`` failed ones: the base doubled each time,
    at most an hour."""
    base = float(settings.CONCORD_WEBHOOK_RETRY_SECONDS)
    return min(base * 2 ** max(attempts - 1, 0), MAX_BACKOFF_S)


_TAGS = re.compile(r"<[^>]{0,200}>")
_SPACE = re.compile(r"\s+")


def excerpt(*, raw: bytes | str, limit: int = EXCERPT_CHARS) -> str:
    """A receiver's answer as one short line: decoded leniently, tags and control characters
    removed, whitespace collapsed, at most ``limit`` characters (never the body verbatim)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = _TAGS.sub(" ", text)
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _post(subscription: Subscription, delivery: Delivery) -> tuple[int | None, str, bool]:
    """One signed POST: (status code or None, error or "", whether retrying could help)."""
    import httpx

    body = signing.body_bytes(delivery.payload)
    headers = signing.signed_headers(
        secret=subscription.secret,
        event=delivery.event,
        event_id=str(delivery.event_id),
        timestamp=int(time.time()),
        body=body,
    )
    try:
        destination_check(url=subscription.url)
    except DestinationRefused as exc:
        return None, excerpt(raw=str(exc), limit=400), False
    timeout = float(settings.CONCORD_WEBHOOK_TIMEOUT)
    client = checked_http_client(
        allow_private=False,
        timeout=timeout,
        private_hosts=settings.CONCORD_WEBHOOK_PRIVATE_HOSTS,
        subject=SUBJECT,
        remedy=REMEDY,
    )
    try:
        with client, client.stream("POST", subscription.url, content=body, headers=headers) as r:
            answer = b""
            for chunk in r.iter_bytes():
                answer += chunk
                if len(answer) >= READ_BYTES:
                    break
            code = r.status_code
    except httpx.TimeoutException:
        return None, f"No answer within {timeout:g} s (timed out).", True
    except httpx.HTTPError as exc:
        return None, excerpt(raw=f"{type(exc).__name__}: {exc}", limit=400), True
    if 200 <= code < 300:
        return code, "", True
    if 300 <= code < 400:
        return code, f"HTTP {code}: redirects are not followed; give the final URL.", True
    said = excerpt(raw=answer[:READ_BYTES])
    return code, f"HTTP {code}" + (f": {said}" if said else ""), True


def delivery_attempt(*, delivery_id: int) -> str:
    """Make the next attempt of a delivery that is due; returns its status afterwards, or
    "skipped" when another worker has it or it is not due (a repeated task is harmless: the
    claim is a conditional update)."""
    now = timezone.now()
    claimed = (
        Delivery.objects.filter(
            pk=delivery_id, status__in=(Delivery.Status.PENDING, Delivery.Status.RETRYING)
        )
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(status=Delivery.Status.SENDING, attempts=F("attempts") + 1, started_at=now)
    )
    if not claimed:
        return "skipped"
    delivery = Delivery.objects.select_related("subscription").get(pk=delivery_id)
    subscription = delivery.subscription
    if not subscription.is_active:
        code, error, retry = None, "The subscription is paused; redeliver once it is on.", False
    else:
        code, error, retry = _post(subscription, delivery)
    changes: dict[str, Any] = {"last_status_code": code, "last_error": error[:500]}
    if not error:
        changes.update(status=Delivery.Status.DELIVERED, delivered_at=timezone.now())
        countdown = None
    elif retry and delivery.attempts < delivery.give_up_after:
        countdown = backoff_seconds(attempts=delivery.attempts)
        changes.update(
            status=Delivery.Status.RETRYING,
            next_attempt_at=timezone.now() + timedelta(seconds=countdown),
        )
    else:
        changes.update(status=Delivery.Status.FAILED, next_attempt_at=None)
        countdown = None
    Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.SENDING).update(**changes)
    if countdown is not None:
        _send(delivery_id, countdown=countdown)
    return changes["status"]


def delivery_redeliver(*, delivery: Delivery) -> Delivery:
    """Send a delivery again now, whatever became of it (delivered, failed, waiting to retry),
    with the same id and payload and a full allowance of attempts. Refused (409) while an
    attempt is under way."""
    now = timezone.now()
    changed = (
        Delivery.objects.filter(pk=delivery.pk)
        .exclude(status=Delivery.Status.SENDING)
        .update(
            status=Delivery.Status.PENDING,
            next_attempt_at=None,
            give_up_after=F("attempts") + settings.CONCORD_WEBHOOK_MAX_ATTEMPTS,
            updated_at=now,
        )
    )
    if not changed:
        raise WebhookRefused(
            "An attempt of this delivery is under way; try again in a moment.", code="conflict"
        )
    transaction.on_commit(functools.partial(_send, delivery.pk))
    delivery.refresh_from_db()
    return delivery


def deliveries_due_send(*, grace_s: float = 60.0, now: datetime | None = None) -> int:
    """The safety net (Celery beat, ``webhooks.send_due``): hand to a worker every delivery that
    is due for ``grace_s`` seconds and was not taken (its task was lost or never queued), and
    take back attempts whose worker died (sending for longer than a timeout allows). Returns
    how many were sent."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=grace_s)
    stuck = now - timedelta(seconds=float(settings.CONCORD_WEBHOOK_TIMEOUT) * 2 + 120)
    Delivery.objects.filter(status=Delivery.Status.SENDING, started_at__lt=stuck).update(
        status=Delivery.Status.RETRYING, next_attempt_at=now, last_error="The worker stopped."
    )
    due: Iterable[int] = Delivery.objects.filter(
        Q(status=Delivery.Status.PENDING, created_at__lte=cutoff, next_attempt_at__isnull=True)
        | Q(
            status__in=(Delivery.Status.PENDING, Delivery.Status.RETRYING),
            next_attempt_at__lte=cutoff,
        )
    ).values_list("id", flat=True)[:1000]
    sent = 0
    for delivery_id in list(due):
        if _eager():
            delivery_attempt(delivery_id=delivery_id)
        else:
            _send(delivery_id)
        sent += 1
    return sent
