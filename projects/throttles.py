"""Request rates for the API (DRF throttles): per signed-in account and per anonymous client
address, counted in the cache (Redis in production, so every worker shares the count). Over the
rate: a JSON 429 ``{"detail", "code": "too_many_requests"}`` with ``Retry-After``
(``core.errors.exception_handler``).

The rates are ``CONCORD_API_RATE_USER`` and ``CONCORD_API_RATE_ANONYMOUS`` (DRF's "number/period",
e.g. ``6000/min``), read on every request so a test can lower them. Failed logins have their own
lock (projects/auth.py); the token endpoint is not throttled here.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class AccountRate(UserRateThrottle):
    """A signed-in account's requests (anonymous ones are counted by address)."""

    scope = "user"

    def get_rate(self) -> str | None:
        return settings.CONCORD_API_RATE_USER or None


class AddressRate(AnonRateThrottle):
    """Requests without an account, per client address (the proxy's header where one is named,
    as for the login lock)."""

    scope = "anon"

    def get_rate(self) -> str | None:
        return settings.CONCORD_API_RATE_ANONYMOUS or None

    def get_ident(self, request) -> str:
        from projects.auth import client_address  # imports DRF's views, which import this

        return client_address(request) or super().get_ident(request)
