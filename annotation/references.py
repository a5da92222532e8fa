"""A short reference for an item that annotators and researchers can both quote ("item #K7Q2PM
looks wrong"). It is keyed with the server secret, so it says nothing about the item (neither
its place in the queue nor whether it is a control), and it is stable while the secret is."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: easy to read out and type
LENGTH = 6  # 31**6 ≈ 887 million: rare collisions even in a project of many thousand items


def item_reference(*, item_id: int) -> str:
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"concord-item:{item_id}".encode(), hashlib.sha256
    ).digest()
    number = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(LENGTH):
        number, rest = divmod(number, len(ALPHABET))
        chars.append(ALPHABET[rest])
    return "#" + "".join(chars)
