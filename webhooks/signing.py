"""How a delivery is signed: HMAC-SHA256 over ``"{timestamp}." + body`` with the subscription's
secret, sent as ``Concord-Signature: v1=<hex>`` beside ``Concord-Webhook-Id`` (the event's id)
and ``Concord-Timestamp`` (Unix seconds at sending). The signature covers the timestamp, so a
captured request cannot be replayed later with a fresh one; a receiver refuses timestamps older
than a few minutes and ids it has seen. ``concord_client.webhooks.verify`` is the receiver's side.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

ID_HEADER = "Concord-Webhook-Id"
TIMESTAMP_HEADER = "Concord-Timestamp"
SIGNATURE_HEADER = "Concord-Signature"
EVENT_HEADER = "Concord-Event"


def body_bytes(payload: dict[str, Any]) -> bytes:
    """The request body: compact JSON, keys sorted, UTF-8 (the same bytes on every attempt)."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signature(*, secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def signed_headers(
    *, secret: str, event: str, event_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "Concord-Webhooks/1",
        ID_HEADER: event_id,
        EVENT_HEADER: event,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret=secret, timestamp=timestamp, body=body),
    }
