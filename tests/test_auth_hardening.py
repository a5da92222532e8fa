"""Login lock shared by every login path, a per-address cap, and logins that survive a Redis outage.

Issue 14 (hardening): after /login/ locked an account, /admin/login/ still tried passwords and the
right one logged in; 30 usernames tried once each from one address were all allowed; and with
Redis down the login page and the token endpoint answered 500.
"""

import shutil
import socket
import subprocess
import time

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from tests import factories
from tests.conftest import require

LOCKED = b"Too many failed attempts"


@pytest.fixture
def superuser(db):
    user = factories.UserFactory(is_staff=True, is_superuser=True)
    return user


def wrong(client, path, username, **extra):
    return client.post(path, {"username": username, "password": "wrong"}, **extra)


def right(client, path, username, **extra):
    return client.post(path, {"username": username, "password": factories.PASSWORD}, **extra)


def test_a_lock_from_the_login_page_also_closes_the_admin_login_and_the_token_endpoint(
    superuser, settings
):
    settings.LOGIN_RATE_LIMIT = 3
    client = Client()
    for _ in range(3):
        assert wrong(client, "/login/", superuser.username).status_code == 200
    admin = right(client, "/admin/login/", superuser.username)
    assert admin.status_code == 429 and LOCKED in admin.content
    assert client.get("/admin/").status_code == 302  # not logged in: sent to the admin login
    token = right(APIClient(), "/api/auth/token/", superuser.username)
    assert token.status_code == 429
    assert token.json()["code"] == "too_many_requests"
    assert "token" not in token.json()


def test_failures_on_the_admin_login_and_the_token_endpoint_count_towards_one_lock(
    superuser, settings
):
    settings.LOGIN_RATE_LIMIT = 3
    client = Client()
    for _ in range(2):
        assert wrong(client, "/admin/login/", superuser.username).status_code == 200
    assert wrong(APIClient(), "/api/auth/token/", superuser.username).status_code == 400
    locked = right(client, "/login/", superuser.username)
    assert locked.status_code == 429 and LOCKED in locked.content
    assert "_auth_user_id" not in client.session


def test_one_address_trying_many_usernames_is_capped_but_other_addresses_are_not(db, settings):
    settings.LOGIN_RATE_LIMIT = 3
    settings.LOGIN_ADDRESS_LIMIT = 10
    user = factories.UserFactory()
    sprayer = Client(REMOTE_ADDR="203.0.113.50")
    for number in range(10):
        response = wrong(sprayer, "/login/", f"someone-{number}")
        assert response.status_code == 200, number
    # The address has used its allowance: even a right password (of an account with no failures)
    # is refused from there, through every login path.
    assert right(sprayer, "/login/", user.username).status_code == 429
    token = APIClient(REMOTE_ADDR="203.0.113.50").post(
        "/api/auth/token/", {"username": user.username, "password": factories.PASSWORD}
    )
    assert token.status_code == 429
    assert right(Client(REMOTE_ADDR="198.51.100.20"), "/login/", user.username).status_code == 302


def test_the_trusted_client_address_header_feeds_the_per_address_cap(db, settings):
    settings.LOGIN_RATE_LIMIT = 3
    settings.LOGIN_ADDRESS_LIMIT = 4
    settings.CONCORD_CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    user = factories.UserFactory()
    proxy = Client(REMOTE_ADDR="10.0.0.2")  # every request arrives from the proxy
    for number in range(4):
        wrong(proxy, "/login/", f"nobody-{number}", HTTP_X_FORWARDED_FOR="spoof, 203.0.113.9")
    assert (
        right(proxy, "/login/", user.username, HTTP_X_FORWARDED_FOR="203.0.113.9").status_code
        == 429
    )
    assert (
        right(proxy, "/login/", user.username, HTTP_X_FORWARDED_FOR="198.51.100.7").status_code
        == 302
    )


def test_a_malformed_client_address_header_or_username_is_no_server_error(db, settings):
    settings.CONCORD_CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    client = Client()
    response = wrong(client, "/login/", "x" * 400 + "\x00", HTTP_X_FORWARDED_FOR="not-an-address")
    assert response.status_code == 200
    token = APIClient().post(
        "/api/auth/token/",
        {"username": "y" * 400, "password": "p"},
        HTTP_X_FORWARDED_FOR="999.1.1.1",
    )
    assert token.status_code == 400


def test_a_successful_login_clears_only_that_accounts_failures_not_the_address_count(db, settings):
    settings.LOGIN_RATE_LIMIT = 3
    settings.LOGIN_ADDRESS_LIMIT = 5
    mine = factories.UserFactory()
    client = Client()
    for number in range(3):
        wrong(client, "/login/", f"victim-{number}")
    wrong(client, "/login/", mine.username)
    assert right(client, "/login/", mine.username).status_code == 302
    # Logging in to one's own account does not buy a sprayer a fresh allowance: the three
    # failures on other accounts still count, so two more reach the address limit.
    assert wrong(Client(), "/login/", "victim-8").status_code == 200
    assert wrong(Client(), "/login/", "victim-9").status_code == 200
    assert right(Client(), "/login/", mine.username).status_code == 429


# --- Redis down -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test's own (never the shared one), stopped by the test."""
    binary = shutil.which("redis-server")
    require(binary is not None, "needs the redis-server binary")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail("the private redis-server did not start")
            time.sleep(0.05)  # sleep-ok: polls another process (redis-server) until it answers
    yield process, f"redis://127.0.0.1:{port}/0"
    if process.poll() is None:
        process.kill()
        process.wait()


def test_login_and_token_keep_working_and_locking_while_redis_is_down(db, settings, private_redis):
    from django.core.cache import cache

    process, url = private_redis
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    }
    settings.LOGIN_RATE_LIMIT = 3
    cache.set("probe", 1)
    assert cache.get("probe") == 1  # the cache really is that Redis
    process.terminate()
    process.wait()
    with pytest.raises(Exception):  # noqa: B017 - whichever error the client raises
        cache.get("probe")

    user = factories.UserFactory()
    assert right(Client(), "/login/", user.username).status_code == 302
    token = right(APIClient(), "/api/auth/token/", user.username)
    assert token.status_code == 200 and token.json()["token"]
    other = factories.UserFactory()
    client = Client()
    for _ in range(3):
        assert wrong(client, "/login/", other.username).status_code == 200
    assert right(client, "/login/", other.username).status_code == 429
    assert right(APIClient(), "/api/auth/token/", other.username).status_code == 429
    assert get_user_model().objects.filter(username=other.username).exists()


def test_a_username_logs_in_whatever_its_case_unless_two_accounts_differ_only_in_case(db):
    # Found by an outside probe: sign-up refuses "ALICE" next to alice, but "Alice" could not
    # log in (page or token) and the members page could not add "Annotator1" for annotator1.
    from projects import members

    alice = factories.UserFactory(username="alice-case")
    page = right(Client(), "/login/", "Alice-Case")
    assert page.status_code == 302
    token = right(APIClient(), "/api/auth/token/", "ALICE-CASE")
    assert token.status_code == 200 and token.json()["token"]
    assert members.account_username("ALICE-case") == alice.username
    project = factories.ProjectFactory()
    added = members.member_add(project=project, username="Alice-Case", role="annotator")
    assert added.user == alice
    # Two older accounts that differ only in case: each needs its exact name.
    factories.UserFactory(username="Bob-Case")
    factories.UserFactory(username="bob-case")
    assert members.account_username("BOB-CASE") == "BOB-CASE"
    assert right(Client(), "/login/", "BOB-CASE").status_code == 200  # the form again
    assert right(Client(), "/login/", "Bob-Case").status_code == 302
