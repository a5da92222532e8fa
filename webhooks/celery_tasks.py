"""Celery tasks of the webhooks app (ids in; the work is in services)."""

from celery import shared_task

from webhooks import services


@shared_task(
    name="webhooks.deliver", acks_late=True, ignore_result=True, time_limit=120, soft_time_limit=100
)
def deliver(delivery_id: int) -> str:
    """One attempt of one delivery. Retries are new tasks with a countdown (the service
    schedules them), so a worker never sleeps on a receiver; a repeated task is skipped."""
    return services.delivery_attempt(delivery_id=delivery_id)


@shared_task(name="webhooks.send_due", ignore_result=True)
def send_due() -> int:
    """Beat's safety net: deliveries due and not taken (a lost task, a broker that was away)."""
    return services.deliveries_due_send()
