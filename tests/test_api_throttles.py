"""API request rates (issue 24): per signed-in account and per anonymous client address, from
settings; over the rate a JSON 429 with code ``too_many_requests`` and ``Retry-After``."""

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from tests import factories
from tests.conftest import client_for


@pytest.fixture
def fresh_counts():
    """Forget earlier counts of the idents used here (ids are reused between tests)."""
    used: list[str] = []
    yield used.append
    cache.delete_many(used)


def assert_throttled(response) -> None:
    assert response.status_code == 429, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["code"] == "too_many_requests" and "throttled" in body["detail"].lower()
    assert int(response["Retry-After"]) > 0


def test_an_account_over_its_rate_gets_a_json_429_and_others_go_on(db, settings, fresh_counts):
    settings.CONCORD_API_RATE_USER = "3/min"
    busy, other = factories.UserFactory(), factories.UserFactory()
    for user in (busy, other):
        fresh_counts(f"throttle_user_{user.pk}")
        cache.delete(f"throttle_user_{user.pk}")
    client = client_for(busy)
    assert [client.get("/api/projects/").status_code for _ in range(3)] == [200, 200, 200]
    assert_throttled(client.get("/api/projects/"))
    assert client_for(other).get("/api/projects/").status_code == 200


# Anonymous requests reach a throttle where no account is needed (a protected URL answers 401
# first): the published schema, which is costly to build.
OPEN = "/api/schema/"


def test_anonymous_requests_are_counted_per_address(db, settings, fresh_counts):
    settings.CONCORD_API_RATE_ANONYMOUS = "2/min"
    for address in ("203.0.113.7", "203.0.113.8"):
        fresh_counts(f"throttle_anon_{address}")
        cache.delete(f"throttle_anon_{address}")
    client = APIClient(REMOTE_ADDR="203.0.113.7")
    assert [client.get(OPEN).status_code for _ in range(2)] == [200, 200]
    assert_throttled(client.get(OPEN))
    assert APIClient(REMOTE_ADDR="203.0.113.8").get(OPEN).status_code == 200


def test_behind_a_proxy_the_address_comes_from_its_header(db, settings, fresh_counts):
    settings.CONCORD_API_RATE_ANONYMOUS = "1/min"
    settings.CONCORD_CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    for address in ("198.51.100.1", "198.51.100.2"):
        fresh_counts(f"throttle_anon_{address}")
        cache.delete(f"throttle_anon_{address}")
    proxy = APIClient(REMOTE_ADDR="10.0.0.1")
    assert proxy.get(OPEN, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 200
    assert_throttled(proxy.get(OPEN, HTTP_X_FORWARDED_FOR="198.51.100.1"))
    assert proxy.get(OPEN, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 200


def test_the_default_rates_leave_room_for_scripts(settings):
    from rest_framework.throttling import SimpleRateThrottle

    per_minute = {
        name: SimpleRateThrottle.parse_rate(None, getattr(settings, name))
        for name in ("CONCORD_API_RATE_USER", "CONCORD_API_RATE_ANONYMOUS")
    }
    assert per_minute["CONCORD_API_RATE_USER"] == (6000, 60)
    assert per_minute["CONCORD_API_RATE_ANONYMOUS"] == (600, 60)
