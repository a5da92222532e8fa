"""Request rates for the API (DRF throttles): per signed-in account and per anonymous client
address, counted in the cache (Redis in production, so every worker shares the count). Over the
rate: a JSON 429 ``{"detail", "code": "too_many_requests"}`` with ``Retry-After``
(``core.errors.exception_handler``).

The rates are ``CONCORD_API_RATE_USER`` and ``CONCORD_API_RATE_ANONYMOUS`` (DRF's "number/period",
e.g. ``6000/min``), read on every request so a test can lower them. Failed logins have their own
lock (projects/auth.py); the token endpoint is not throttled here. With the cache unavailable
requests are not counted (and not refused).
"""

from __future__ import annotations

import logging

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

log = logging.getLogger(__name__)


class _CountedInTheCache(SimpleRateThrottle):
    """With the cache away (Redis down) requests are let through, not failed: the rate is a
    guard, and the rest of the API works without Redis."""

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except Exception as exc:  # redis ConnectionError, timeouts: the cache is away
            log.warning("API rate not counted (the cache is unavailable): %s", exc)
            return True


class AccountRate(_CountedInTheCache, UserRateThrottle):
    """A signed-in account's requests (anonymous ones are counted by address)."""

    scope = "user"

    def get_rate(self) -> str | None:
        return settings.CONCORD_API_RATE_USER or None


class AddressRate(_CountedInTheCache, AnonRateThrottle):
    """Requests without an account, per client address (the proxy's header where one is named,
    as for the login lock)."""

    scope = "anon"

    def get_rate(self) -> str | None:
        return settings.CONCORD_API_RATE_ANONYMOUS or None

    def get_ident(self, request) -> str:
        from projects.auth import client_address  # imports DRF's views, which import this

        return client_address(request) or super().get_ident(request)
