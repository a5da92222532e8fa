"""API tokens: stored only as a hash, expiring, and revocable by their owner (issue 14).

Clients keep ``POST /api/auth/token/`` and ``Authorization: Token <key>``.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from tests import factories


@pytest.fixture
def user(project):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    return user


def new_token(user) -> dict:
    response = APIClient().post(
        "/api/auth/token/", {"username": user.username, "password": factories.PASSWORD}
    )
    assert response.status_code == 200, response.content
    return response.json()


def with_token(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_the_token_is_stored_only_as_a_hash_and_carries_an_expiry(user, settings):
    from knox.models import AuthToken

    body = new_token(user)
    token = body["token"]
    stored = AuthToken.objects.get(user=user)
    assert token not in {stored.digest, stored.token_key}
    assert len(stored.token_key) < len(token)  # a lookup prefix, not the secret
    assert stored.expiry is not None and stored.expiry > timezone.now()
    assert body["expiry"]
    assert with_token(token).get("/api/projects/").status_code == 200
    # The old plain-text token table is gone, with every key it held.
    assert "authtoken_token" not in connection.introspection.table_names()


def test_an_expired_token_is_refused(user):
    from knox.models import AuthToken

    token = new_token(user)["token"]
    AuthToken.objects.filter(user=user).update(expiry=timezone.now() - timedelta(seconds=1))
    response = with_token(token).get("/api/projects/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_a_request_reads_the_presented_token_only_not_the_accounts_others(user):
    # Knox read every token of the account on each request (to delete expired ones): a query
    # more on every API call, its rows growing with the tokens an account's logins leave.
    tokens = [new_token(user)["token"] for _ in range(5)]
    with CaptureQueriesContext(connection) as queries:
        assert with_token(tokens[2]).get("/api/projects/").status_code == 200
    token_reads = [q["sql"] for q in queries.captured_queries if '"knox_authtoken"' in q["sql"]]
    assert len(token_reads) == 1
    assert 'WHERE "knox_authtoken"."token_key" =' in token_reads[0]


def test_a_new_token_sweeps_the_accounts_expired_tokens_only(user, project):
    from knox.models import AuthToken

    other = factories.UserFactory()
    factories.MembershipFactory(project=project, user=other, role="annotator")
    old, kept = new_token(user)["token"], new_token(user)["token"]
    others = new_token(other)["token"]
    expired = timezone.now() - timedelta(seconds=1)
    AuthToken.objects.filter(token_key=old[:15]).update(expiry=expired)  # knox: a prefix
    AuthToken.objects.filter(user=other).update(expiry=expired)
    assert with_token(kept).get("/api/projects/").status_code == 200
    assert AuthToken.objects.filter(user=user).count() == 2  # a request sweeps nothing
    new_token(user)
    assert AuthToken.objects.filter(user=user).count() == 2  # the expired one went
    assert with_token(old).get("/api/projects/").status_code == 401
    assert with_token(kept).get("/api/projects/").status_code == 200
    assert AuthToken.objects.filter(user=other).count() == 1  # another account's: left
    assert with_token(others).get("/api/projects/").status_code == 401  # refused, then deleted
    assert not AuthToken.objects.filter(user=other).exists()


def test_logout_revokes_the_token_used_and_logout_all_revokes_every_token(user):
    first, second, third = (new_token(user)["token"] for _ in range(3))
    assert with_token(first).post("/api/auth/logout/").status_code == 204
    assert with_token(first).get("/api/projects/").status_code == 401
    assert with_token(second).get("/api/projects/").status_code == 200
    assert with_token(second).post("/api/auth/logout-all/").status_code == 204
    for token in (second, third):
        assert with_token(token).get("/api/projects/").status_code == 401


def test_one_users_logout_all_leaves_other_users_tokens(user, project):
    other = factories.UserFactory()
    factories.MembershipFactory(project=project, user=other, role="annotator")
    theirs = new_token(other)["token"]
    assert with_token(new_token(user)["token"]).post("/api/auth/logout-all/").status_code == 204
    assert with_token(theirs).get("/api/projects/").status_code == 200


@pytest.mark.parametrize("header", ["Token \xe9\xe8", "Token abc def", "Token", "Token zz-not-hex"])
def test_a_malformed_token_header_is_a_401_not_a_500(db, header):
    response = APIClient().get("/api/projects/", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["detail"]


def test_the_token_endpoints_are_in_the_schema(researcher_client):
    schema = researcher_client.get("/api/schema/").content
    for path in (b"/api/auth/token/", b"/api/auth/logout/", b"/api/auth/logout-all/"):
        assert path in schema


def test_logout_without_a_token_is_a_json_401_not_a_500(user):
    """Signed in some other way (a session, a test client): there is no token to revoke."""
    from django.test import Client

    from tests.conftest import client_for

    for client in (APIClient(), client_for(user)):
        response = client.post("/api/auth/logout/")
        assert response.status_code == 401
        assert response.json()["code"] == "not_authenticated" and response.json()["detail"]
    session = Client()
    session.force_login(user)
    assert session.post("/api/auth/logout/").status_code == 401
