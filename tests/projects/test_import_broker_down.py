"""An item import while the broker is away (issue 24): the upload is answered at once with a 503
naming the queue, and its job is failed with the reason, never left "queued" for a worker that
will not come. Celery's broker and Django's cache point at a redis-server that is not running
(a free port nobody listens on), as when Redis is down in production."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Item
from studies.models import ImportJob
from tests import factories
from tests.conftest import client_for
from tests.redis_server import RedisServer, require_redis_server, use_for_django_and_celery


@pytest.fixture
def redis_down(settings):
    require_redis_server()
    server = RedisServer()  # never started: its port refuses connections
    with use_for_django_and_celery(server, settings):
        yield server


@pytest.fixture
def committed_project(transactional_db, researcher):
    """Committed as in production, so the request's on-commit queueing runs inside it."""
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


def upload() -> SimpleUploadedFile:
    record = factories.citation_payload(0)
    return SimpleUploadedFile("items.jsonl", (json.dumps(record) + "\n").encode())


def test_an_upload_with_the_broker_down_is_a_503_and_its_job_fails_with_the_reason(
    committed_project, researcher, redis_down
):
    project = committed_project
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/import/",
        {"file": upload(), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["code"] == "unavailable" and "queue" in body["detail"]
    (job,) = ImportJob.objects.filter(project=project)
    assert job.status == ImportJob.Status.FAILED and job.finished_at is not None
    assert "could not be queued" in job.message
    assert body["id"] == job.id and body["status"] == "failed"
    assert not Item.objects.filter(project=project).exists()


def test_the_broker_is_given_up_on_quickly(settings):
    """Bounded connect and publish: a broker that does not answer costs seconds, not the 19 s
    (or a hung request) of Celery's defaults. The figures, not a stopwatch."""
    from config.celery import app

    options = app.conf.broker_transport_options
    assert options["socket_connect_timeout"] <= 3 and options["socket_timeout"] <= 5
    assert app.conf.broker_connection_timeout <= 3
    policy = app.conf.task_publish_retry_policy
    assert policy["max_retries"] <= 2 and policy["interval_max"] <= 0.5
