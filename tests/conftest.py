import os
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests import factories

REPO = Path(__file__).resolve().parents[1]
# CI sets this: a test that needs PostgreSQL, Redis or Chromium must run there, never skip.
REQUIRE_SERVICES = os.environ.get("CONCORD_REQUIRE_SERVICES") == "1"


def require(condition: bool, reason: str) -> None:
    """Skip on a developer machine without the service; fail in CI, where it must exist."""
    if condition:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"CI requires this: {reason}")
    pytest.skip(reason)


@pytest.fixture
def postgres(db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")


@pytest.fixture
def researcher(db):
    return factories.UserFactory(username=factories.unique("researcher"))


@pytest.fixture
def project(db, researcher):
    project = factories.ProjectFactory(annotators_per_item=2)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


@pytest.fixture
def annotator(project):
    user = factories.UserFactory(username=factories.unique("annotator"))
    factories.MembershipFactory(project=project, user=user, role="annotator")
    return user


@pytest.fixture
def items(project):
    return factories.make_items(project, 5)


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def annotator_client(annotator):
    return client_for(annotator)


@pytest.fixture
def researcher_client(researcher):
    return client_for(researcher)
