"""The dashboard without Redis: a private redis-server (never the shared one) serves as Django's
cache and Celery's broker, and the test stops and restarts it."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agreement import celery_tasks
from agreement.models import AgreementSnapshot
from tests.agreement import helpers
from tests.redis_server import running_redis_server, use_for_django_and_celery

Status = AgreementSnapshot.Status


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def private_redis():
    with running_redis_server() as server:
        yield server


@pytest.fixture
def study(transactional_db, researcher):
    # Committed as in production, so a request's on-commit queueing runs inside the request.
    return helpers.seeded_study(researcher)


def get(client, project):
    response = client.get(f"/p/{project.slug}/agreement/")
    return response, response.content.decode()


def queued_ids(server) -> list[int]:
    ids = []
    for raw in server.client().lrange("celery", 0, -1):
        headers = json.loads(raw).get("headers", {})
        if headers.get("task") == "agreement.compute_snapshot":
            ids.append(int(headers["argsrepr"].strip("(,)")))
    return ids


def test_with_redis_down_a_large_project_shows_the_last_report_and_says_the_update_was_not_queued(
    study, researcher, settings, private_redis
):
    project, items, users = study
    client = Client()
    client.force_login(researcher)
    with use_for_django_and_celery(private_redis, settings):
        response, html = get(client, project)  # small: computed inline
        assert "up to date" in html
        settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0  # from now on: queued
        helpers.answer(items["c2"], users["a"], [1])

        private_redis.stop()
        response, html = get(client, project)
        assert response.status_code == 200
        assert "out of date" in html and "0.175" in html  # the last report, still shown
        assert "Could not queue the update" in html
        assert "updating…" not in html
        # Marked failed at once, with the error; nothing is left pending.
        snapshot = AgreementSnapshot.objects.get(project=project, status=Status.FAILED)
        assert "queue" in snapshot.error and snapshot.started_at is None
        assert not AgreementSnapshot.objects.filter(status__in=AgreementSnapshot.ACTIVE).exists()

        # Still down: the next request tries again, fails again, and still answers.
        response, html = get(client, project)
        assert response.status_code == 200 and "Could not queue the update" in html
        assert AgreementSnapshot.objects.filter(project=project).count() == 2

        # Redis is back: the next request queues the same snapshot.
        private_redis.start()
        response, html = get(client, project)
        assert response.status_code == 200
        assert "updating…" in html and "Could not queue" not in html
        snapshot.refresh_from_db()
        assert snapshot.status == Status.PENDING and snapshot.error == ""
        assert queued_ids(private_redis) == [snapshot.pk]

        assert celery_tasks.compute_snapshot.run(snapshot.pk) == "done"
        response, html = get(client, project)
        assert "up to date" in html and "updating…" not in html


def test_with_redis_down_a_small_project_is_computed_inline(
    study, researcher, settings, private_redis
):
    project, _, _ = study
    client = Client()
    client.force_login(researcher)
    with use_for_django_and_celery(private_redis, settings):
        private_redis.stop()
        response, html = get(client, project)
    assert response.status_code == 200
    assert "up to date" in html and "0.175" in html


def test_a_computation_that_failed_is_not_retried_by_itself(
    study, researcher, settings, private_redis, monkeypatch
):
    """Only a snapshot that was never queued is retried on the next request; a computation that
    failed on its data waits for the Retry button."""
    from agreement import services

    project, _, _ = study
    client = Client()
    client.force_login(researcher)

    def broken(**kwargs):
        raise RuntimeError("bad data on item c2")

    monkeypatch.setattr(services, "gather", broken)
    with use_for_django_and_celery(private_redis, settings):
        get(client, project)
        response, html = get(client, project)
    assert "The computation failed." in html and "bad data on item c2" in html
    assert queued_ids(private_redis) == []
