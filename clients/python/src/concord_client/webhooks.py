"""The receiving side of Concord's webhooks: check a delivery's signature and age.

Concord signs ``"{timestamp}." + body`` with HMAC-SHA256 and the webhook's secret and sends
``Concord-Signature: v1=<hex>``, ``Concord-Timestamp`` (Unix seconds) and ``Concord-Webhook-Id``
(the event's id, the same on every retry: drop ids you have seen).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any


class InvalidSignature(ValueError):
    """The delivery is not signed with this secret, or is too old (a replay)."""


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    raise InvalidSignature(f"missing header {name}")


def verify(
    *,
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    tolerance_s: float = 300,
    now: float | None = None,
) -> dict[str, Any]:
    """The payload of a delivery signed with ``secret`` and sent within ``tolerance_s`` seconds
    of ``now``; ``InvalidSignature`` otherwise. Pass the raw body, before any JSON parsing."""
    timestamp = _header(headers, "Concord-Timestamp")
    sent = _header(headers, "Concord-Signature")
    try:
        when = int(timestamp)
    except ValueError:
        raise InvalidSignature("the timestamp is not a number") from None
    if abs((time.time() if now is None else now) - when) > tolerance_s:
        raise InvalidSignature("the timestamp is too old or in the future (a replay?)")
    mac = hmac.new(secret.encode(), f"{when}.".encode() + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(sent, f"v1={mac}"):
        raise InvalidSignature("the signature does not match")
    return json.loads(body)
