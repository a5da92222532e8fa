"""Webhooks: a project's subscriptions (URL, events, secret) and their signed, logged deliveries.

Lower apps announce what happened with ``webhooks.services.event_emit`` (answer submitted, item
complete, batch finished, import finished, judge run finished, agreement snapshot ready); after
the transaction commits, one delivery per matching subscription is recorded and handed to
Celery, which POSTs the HMAC-signed JSON with retries and backoff. Nothing calls out in the
request that caused the event.
"""
